/** The dataset the Proxy tests use: 44-byte flow records with two fields a policy hides. */
export const FLOWS44 = {
  id: 'flows',
  name: 'Network flows',
  record_size: 44,
  time_field: 'ts',
  time_index_interval: 60,
  fields: [
    { name: 'ts', type: 'timestamp', offset: 0, size: 8 },
    { name: 'src_ip', type: 'ipv4', offset: 8, size: 4 },
    { name: 'dst_ip', type: 'ipv4', offset: 12, size: 4 },
    { name: 'tenant', type: 'uint32', offset: 16, size: 4 },
    { name: 'bytes', type: 'uint64', offset: 20, size: 8 },
    { name: 'secret', type: 'string', offset: 28, size: 16 },
  ],
};
