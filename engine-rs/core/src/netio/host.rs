//! [`TcpHost`]: one thread that owns a packet port and a [`UserTcp`] stack and serves TCP
//! connections to the rest of the process through commands and events. This is how a node's HDWP
//! servers and clients reach a NIC driven from user space (docs/kernel-bypass.md): the thread
//! polls the port (a DPDK port has no interrupts), the process sees byte streams.
//!
//! The port is opened on the thread itself, so DPDK's environment starts there and the thread is
//! DPDK's main core (pinned to the first of TRANSPORT_CORES by the EAL).
//!
//! Flow control both ways: a connection's writes wait in its queue until the stack's send buffer
//! takes them (reported as [`HostEvent::Sent`]); a paused connection is not read, so its receive
//! window closes; and no connection is read while more than `max_undelivered` bytes of
//! [`HostEvent::Data`] have not been taken by the consumer.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::{NetError, PacketPort, TcpConn, TcpState, UserTcp};

/// A connection's number, unique within its host.
pub type ConnId = u32;

/// Bytes read from one connection per round, so one busy peer does not starve the others.
const READ_PER_ROUND: usize = 1 << 20;
/// Longest sleep of an idle host: the latency it adds to the first frame after a quiet spell.
const IDLE_SLEEP: Duration = Duration::from_micros(200);
/// Idle time spent polling before the host sleeps.
const SPIN: Duration = Duration::from_micros(50);

/// Where a host sits and how it treats its connections.
#[derive(Debug, Clone)]
pub struct HostOptions {
    /// The host's IPv4 address.
    pub ip: Ipv4Addr,
    /// The prefix length of its subnet (peers are on the link: there is no router).
    pub prefix: u8,
    /// Bytes of each connection's send and receive buffers.
    pub buffer: usize,
    /// Poll without ever sleeping (a dedicated transport core).
    pub busy_poll: bool,
    /// Received bytes handed out and not yet taken above which nothing more is read.
    pub max_undelivered: usize,
}

/// What the process asks of the host.
#[derive(Debug)]
enum Command {
    Listen { port: u16, backlog: usize },
    Unlisten { port: u16 },
    Connect { id: ConnId, to: SocketAddrV4 },
    Write { id: ConnId, bytes: Vec<u8> },
    End { id: ConnId },
    Abort { id: ConnId },
    Pause { id: ConnId, paused: bool },
}

/// What the host tells the process, in order per connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostEvent {
    /// The port is open and the stack runs.
    Ready { mac: [u8; 6] },
    /// A peer connected to a listened port; `id` is the new connection.
    Accepted {
        id: ConnId,
        port: u16,
        peer: SocketAddrV4,
    },
    /// An outgoing connection is established.
    Connected { id: ConnId },
    /// Bytes received.
    Data { id: ConnId, bytes: Vec<u8> },
    /// Bytes of earlier writes taken by the stack.
    Sent { id: ConnId, bytes: usize },
    /// The peer closed its side: no more data will come.
    Ended { id: ConnId },
    /// The connection is gone; `error` says why when it did not close in order.
    Closed { id: ConnId, error: Option<String> },
    /// The host stopped (the port failed, or it was closed); `error` when it failed.
    Stopped { error: Option<String> },
}

/// A connection's state on the host thread.
struct Conn {
    sock: TcpConn,
    /// The listened port it came from; `None` for an outgoing connection.
    accepted_on: Option<u16>,
    announced: bool,
    out: VecDeque<Vec<u8>>,
    out_at: usize,
    ending: bool,
    fin_queued: bool,
    aborted: bool,
    paused: bool,
    /// The peer's FIN was seen.
    peer_fin: bool,
    /// `Ended` was reported.
    eof: bool,
}

impl Conn {
    fn new(sock: TcpConn, accepted_on: Option<u16>) -> Self {
        Conn {
            sock,
            accepted_on,
            announced: false,
            out: VecDeque::new(),
            out_at: 0,
            ending: false,
            fin_queued: false,
            aborted: false,
            paused: false,
            peer_fin: false,
            eof: false,
        }
    }
}

/// A running host: commands go in through its methods, events come out through the callback
/// given to [`TcpHost::start`], on the host's thread. Dropping it stops the thread.
pub struct TcpHost {
    commands: Sender<Command>,
    next_id: Arc<AtomicU32>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl TcpHost {
    /// Starts the host's thread, which opens the port with `open`, then reports
    /// [`HostEvent::Ready`] (or [`HostEvent::Stopped`] with the reason it could not) to `events`.
    /// `undelivered` counts the bytes of `Data` events handed out; the consumer lowers it as it
    /// takes them.
    pub fn start<P, O, E>(
        name: &str,
        open: O,
        opts: HostOptions,
        undelivered: Arc<AtomicUsize>,
        mut events: E,
    ) -> Result<Self, NetError>
    where
        P: PacketPort,
        O: FnOnce() -> Result<P, NetError> + Send + 'static,
        E: FnMut(Vec<HostEvent>) + Send + 'static,
    {
        let (tx, rx) = mpsc::channel();
        let next_id = Arc::new(AtomicU32::new(1));
        let stop = Arc::new(AtomicBool::new(false));
        let (ids, stopping) = (next_id.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name(name.to_string())
            .spawn(move || {
                let outcome = open()
                    .and_then(|port| UserTcp::new(port, opts.ip, opts.prefix))
                    .and_then(|tcp| {
                        let mac = tcp.port().mac();
                        events(vec![HostEvent::Ready { mac }]);
                        let mut run = Run {
                            tcp,
                            opts,
                            rx,
                            ids,
                            stop: stopping,
                            undelivered,
                            conns: BTreeMap::new(),
                            listeners: HashMap::new(),
                            out: Vec::new(),
                        };
                        run.serve(&mut events)
                    });
                events(vec![HostEvent::Stopped {
                    error: outcome.err().map(|e| e.to_string()),
                }]);
            })
            .map_err(|e| NetError::Io {
                what: "starting the transport thread",
                source: e,
            })?;
        Ok(TcpHost {
            commands: tx,
            next_id,
            stop,
            thread: Some(thread),
        })
    }

    fn send(&self, c: Command) {
        // A stopped host has said so with `Stopped`; commands to it are moot.
        let _ = self.commands.send(c);
    }

    /// Accepts connections on `port`, up to `backlog` handshakes at once.
    pub fn listen(&self, port: u16, backlog: usize) {
        self.send(Command::Listen {
            port,
            backlog: backlog.max(1),
        });
    }

    /// Stops accepting on `port`; its connections stay.
    pub fn unlisten(&self, port: u16) {
        self.send(Command::Unlisten { port });
    }

    /// Opens a connection to `to`; its events carry the id returned.
    pub fn connect(&self, to: SocketAddrV4) -> ConnId {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.send(Command::Connect { id, to });
        id
    }

    /// Queues bytes to send on `id`.
    pub fn write(&self, id: ConnId, bytes: Vec<u8>) {
        self.send(Command::Write { id, bytes });
    }

    /// Closes the sending side of `id` once its queued bytes are sent.
    pub fn end(&self, id: ConnId) {
        self.send(Command::End { id });
    }

    /// Resets `id` at once.
    pub fn abort(&self, id: ConnId) {
        self.send(Command::Abort { id });
    }

    /// Stops (or resumes) reading `id`.
    pub fn pause(&self, id: ConnId, paused: bool) {
        self.send(Command::Pause { id, paused });
    }

    /// Stops the thread (connections are reset) and waits for it.
    pub fn close(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for TcpHost {
    fn drop(&mut self) {
        self.close();
    }
}

/// The host thread's state.
struct Run<P: PacketPort> {
    tcp: UserTcp<P>,
    opts: HostOptions,
    rx: Receiver<Command>,
    ids: Arc<AtomicU32>,
    stop: Arc<AtomicBool>,
    undelivered: Arc<AtomicUsize>,
    conns: BTreeMap<ConnId, Conn>,
    listeners: HashMap<u16, Vec<TcpConn>>,
    out: Vec<HostEvent>,
}

impl<P: PacketPort> Run<P> {
    fn serve(&mut self, events: &mut impl FnMut(Vec<HostEvent>)) -> Result<(), NetError> {
        let mut idle_since: Option<Instant> = None;
        while !self.stop.load(Ordering::Acquire) {
            let mut busy = false;
            while let Ok(c) = self.rx.try_recv() {
                self.command(c)?;
                busy = true;
            }
            busy |= self.tcp.poll()?;
            self.accept()?;
            busy |= self.service();
            if !self.out.is_empty() {
                events(std::mem::take(&mut self.out));
                busy = true;
            }
            if busy || self.opts.busy_poll {
                idle_since = None;
                continue;
            }
            let since = *idle_since.get_or_insert_with(Instant::now);
            if since.elapsed() < SPIN {
                continue;
            }
            // Asleep until a command comes, a timer of the stack is due, or the next look at the
            // port (frames raise no wake-up).
            let wait = self
                .tcp
                .poll_delay()
                .map_or(IDLE_SLEEP, |d| d.min(IDLE_SLEEP));
            match self.rx.recv_timeout(wait) {
                Ok(c) => self.command(c)?,
                Err(RecvTimeoutError::Timeout) => {}
                // The handle is gone without close(): nobody is left to serve.
                Err(RecvTimeoutError::Disconnected) => break,
            }
        }
        for c in self.conns.values() {
            self.tcp.abort(c.sock);
        }
        let _ = self.tcp.poll();
        Ok(())
    }

    fn command(&mut self, c: Command) -> Result<(), NetError> {
        match c {
            Command::Listen { port, backlog } => {
                let mut socks = self.listeners.remove(&port).unwrap_or_default();
                while socks.len() < backlog {
                    socks.push(self.tcp.listen(port, self.opts.buffer)?);
                }
                self.listeners.insert(port, socks);
            }
            Command::Unlisten { port } => {
                for s in self.listeners.remove(&port).unwrap_or_default() {
                    self.tcp.remove(s);
                }
            }
            Command::Connect { id, to } => match self.tcp.connect(to, self.opts.buffer) {
                Ok(sock) => {
                    self.conns.insert(id, Conn::new(sock, None));
                }
                Err(e) => self.out.push(HostEvent::Closed {
                    id,
                    error: Some(e.to_string()),
                }),
            },
            Command::Write { id, bytes } => {
                if let Some(c) = self.conns.get_mut(&id) {
                    if !c.ending && !bytes.is_empty() {
                        c.out.push_back(bytes);
                    }
                }
            }
            Command::End { id } => {
                if let Some(c) = self.conns.get_mut(&id) {
                    c.ending = true;
                }
            }
            Command::Abort { id } => {
                if let Some(c) = self.conns.get_mut(&id) {
                    c.aborted = true;
                    self.tcp.abort(c.sock);
                }
            }
            Command::Pause { id, paused } => {
                if let Some(c) = self.conns.get_mut(&id) {
                    c.paused = paused;
                }
            }
        }
        Ok(())
    }

    /// Listening sockets a peer has started a handshake on become connections; each is replaced
    /// by a fresh listener so the port keeps its backlog.
    fn accept(&mut self) -> Result<(), NetError> {
        let mut taken = Vec::new();
        for (port, socks) in self.listeners.iter_mut() {
            for s in socks.iter_mut() {
                if !self.tcp.is_listening(*s) {
                    let fresh = self.tcp.listen(*port, self.opts.buffer)?;
                    taken.push((*port, std::mem::replace(s, fresh)));
                }
            }
        }
        for (port, sock) in taken {
            let id = self.ids.fetch_add(1, Ordering::Relaxed);
            self.conns.insert(id, Conn::new(sock, Some(port)));
        }
        Ok(())
    }

    /// Moves bytes between the connections' queues and the stack, and reports state changes.
    /// True when anything moved.
    fn service(&mut self) -> bool {
        let mut busy = false;
        let mut gone = Vec::new();
        let full = self.undelivered.load(Ordering::Acquire) > self.opts.max_undelivered;
        for (&id, c) in self.conns.iter_mut() {
            let state = self.tcp.state(c.sock);
            if !c.announced && matches!(state, TcpState::Established | TcpState::PeerClosed) {
                c.announced = true;
                busy = true;
                self.out
                    .push(match (c.accepted_on, self.tcp.remote(c.sock)) {
                        (Some(port), Some(peer)) => HostEvent::Accepted { id, port, peer },
                        _ => HostEvent::Connected { id },
                    });
            }
            if !c.announced && state != TcpState::Closed {
                // A handshake on a listened port that was reset puts the socket back to listening.
                if c.accepted_on.is_some() && self.tcp.is_listening(c.sock) {
                    gone.push(id);
                }
                continue;
            }
            let mut sent = 0;
            while let Some(front) = c.out.front() {
                let n = self.tcp.send(c.sock, &front[c.out_at..]).unwrap_or(0);
                if n == 0 {
                    break;
                }
                sent += n;
                c.out_at += n;
                if c.out_at == front.len() {
                    c.out.pop_front();
                    c.out_at = 0;
                }
            }
            if sent > 0 {
                busy = true;
                self.out.push(HostEvent::Sent { id, bytes: sent });
            }
            if c.ending && c.out.is_empty() && !c.fin_queued {
                c.fin_queued = true;
                self.tcp.close(c.sock);
            }
            if state == TcpState::PeerClosed {
                c.peer_fin = true;
            }
            // Closed from an open state, with no FIN from the peer: a reset or a timeout.
            let reset = state == TcpState::Closed && self.tcp.is_shut(c.sock) && !c.peer_fin;
            // What a closed connection still holds is handed out whatever the flow control says:
            // its socket is about to go.
            if (!c.paused && !full) || state == TcpState::Closed {
                let mut got = 0;
                while got < READ_PER_ROUND {
                    // Read into a buffer of just the size waiting: it is handed on as it is, to
                    // become the JS Buffer without another copy.
                    let want = self.tcp.recv_queue(c.sock).min(READ_PER_ROUND - got);
                    if want == 0 {
                        break;
                    }
                    let mut bytes = vec![0u8; want];
                    let n = self.tcp.recv(c.sock, &mut bytes).unwrap_or(0);
                    if n == 0 {
                        break;
                    }
                    bytes.truncate(n);
                    got += n;
                    self.undelivered.fetch_add(n, Ordering::AcqRel);
                    self.out.push(HostEvent::Data { id, bytes });
                }
                busy |= got > 0;
                let finished =
                    state == TcpState::PeerClosed || (state == TcpState::Closed && !reset);
                if got == 0 && !c.eof && c.announced && finished {
                    c.eof = true;
                    busy = true;
                    self.out.push(HostEvent::Ended { id });
                }
            }
            if state == TcpState::Closed {
                let error = if !c.announced {
                    Some(format!(
                        "no connection to {}: refused or unanswered",
                        self.tcp
                            .remote(c.sock)
                            .map_or_else(|| "the peer".into(), |a| a.to_string())
                    ))
                } else if reset && !c.aborted {
                    Some("the connection was reset by the peer or timed out".into())
                } else {
                    None
                };
                // A handshake that never completed on a listened port was never announced.
                if c.announced || c.accepted_on.is_none() {
                    self.out.push(HostEvent::Closed { id, error });
                }
                gone.push(id);
            }
        }
        for id in gone {
            if let Some(c) = self.conns.remove(&id) {
                self.tcp.remove(c.sock);
            }
            busy = true;
        }
        busy
    }
}
