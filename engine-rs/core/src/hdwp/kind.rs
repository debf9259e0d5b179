//! Frame kinds and stream roles: the one-byte codes of HDWP v1.

/// The kind byte of a frame header (offset 5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum FrameKind {
    /// Opens a stream: protocol version, sender role, dataset, record size.
    Hello = 0x01,
    /// A run of fixed-width records of one batch.
    Records = 0x02,
    /// End of batch: the batch is complete, with its record count and closing hash.
    Eob = 0x03,
    /// Bad batch notice: the batch is void, with a reason.
    Bbn = 0x04,
    /// A query: query id, per-query token and the HDQuery JSON.
    Query = 0x05,
    /// Cancels a query by id and token.
    Cancel = 0x06,
    /// An error closing the stream (or, with a query block, one query's stream).
    Error = 0x07,
    /// Flow-control credit: bytes the receiver grants the sender.
    Credit = 0x08,
    /// A batch's partial aggregate (HDQuery `aggregate`): JSON groups in place of its records.
    Aggregate = 0x09,
    /// A batch's matching records as Arrow-layout columns (HDQuery `result_format: "columns"`).
    Columns = 0x0A,
    /// Ends several batches of a query at once: batch ids with their record counts (result streams).
    Eobs = 0x0B,
    /// The W3C trace context of the sender's span, as JSON (result streams, right after hello).
    TraceContext = 0x0C,
}

impl FrameKind {
    /// Every kind, in code order.
    pub const ALL: [FrameKind; 12] = [
        FrameKind::Hello,
        FrameKind::Records,
        FrameKind::Eob,
        FrameKind::Bbn,
        FrameKind::Query,
        FrameKind::Cancel,
        FrameKind::Error,
        FrameKind::Credit,
        FrameKind::Aggregate,
        FrameKind::Columns,
        FrameKind::Eobs,
        FrameKind::TraceContext,
    ];

    /// The kind for a header byte, if this version defines one.
    pub fn from_u8(b: u8) -> Option<Self> {
        Self::ALL.get((b as usize).wrapping_sub(1)).copied()
    }

    /// Lower-case name as used in docs (the TypeScript `Frame.kind` is its camel-case form,
    /// `traceContext` for `trace_context`).
    pub fn name(self) -> &'static str {
        match self {
            FrameKind::Hello => "hello",
            FrameKind::Records => "records",
            FrameKind::Eob => "eob",
            FrameKind::Bbn => "bbn",
            FrameKind::Query => "query",
            FrameKind::Cancel => "cancel",
            FrameKind::Error => "error",
            FrameKind::Credit => "credit",
            FrameKind::Aggregate => "aggregate",
            FrameKind::Columns => "columns",
            FrameKind::Eobs => "eobs",
            FrameKind::TraceContext => "trace_context",
        }
    }

    /// Whether the payload may open with a query authentication block. Query and cancel frames
    /// carry a query id and token as their own fields, so the block would be redundant there.
    pub fn allows_auth(self) -> bool {
        !matches!(self, FrameKind::Query | FrameKind::Cancel)
    }
}

/// The role of the party that opened a stream, sent in its hello frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Role {
    /// An SDK ingest client sending records to an SCC.
    IngestClient = 0x01,
    /// The message bus ingester sending records to an SCC.
    Ingester = 0x02,
    /// A Storage Chain Controller (replicating to nodes, dispatching queries).
    Scc = 0x03,
    /// A Storage Node (persisting, or streaming query results to a client).
    StorageNode = 0x04,
    /// An SDK query client.
    QueryClient = 0x05,
    /// The SQL server acting as a query client.
    SqlServer = 0x06,
}

impl Role {
    /// Every role, in code order.
    pub const ALL: [Role; 6] = [
        Role::IngestClient,
        Role::Ingester,
        Role::Scc,
        Role::StorageNode,
        Role::QueryClient,
        Role::SqlServer,
    ];

    /// The role for a byte, if this version defines one.
    pub fn from_u8(b: u8) -> Option<Self> {
        Self::ALL.get((b as usize).wrapping_sub(1)).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_unknown_codes_are_none() {
        for k in FrameKind::ALL {
            assert_eq!(FrameKind::from_u8(k as u8), Some(k));
        }
        for r in Role::ALL {
            assert_eq!(Role::from_u8(r as u8), Some(r));
        }
        assert_eq!(FrameKind::from_u8(0), None);
        assert_eq!(FrameKind::from_u8(FrameKind::ALL.len() as u8 + 1), None);
        assert_eq!(FrameKind::from_u8(255), None);
        assert_eq!(Role::from_u8(0), None);
        assert_eq!(Role::from_u8(7), None);
    }
}
