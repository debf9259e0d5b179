/*
 * hd_dpdk: the few DPDK calls HD's user-space packet port needs, as plain exported functions.
 *
 * DPDK's burst calls (rte_eth_rx_burst, rte_eth_tx_burst, rte_pktmbuf_alloc, ...) are static
 * inline functions in its headers, so no other language can call them from the shared libraries
 * alone. This file is compiled against Debian's libdpdk-dev by engine-rs/core/build.rs into
 * libhd_dpdk.so, which engine-rs loads at run time (src/netio/dpdk.rs): the addon itself never
 * links DPDK, and a process that does not open a DPDK port never loads it.
 *
 * One port, one receive queue and one transmit queue. Packets are copied between mbufs and the
 * caller's flat buffers (one copy each way), which keeps mbuf ownership inside this file.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#define HD_BURST 32

static struct rte_mempool *pools[RTE_MAX_ETHPORTS];

/* rte_eal_init with the caller's arguments; returns the number of arguments parsed or -errno. */
int hd_dpdk_eal_init(int argc, char **argv) {
  int n = rte_eal_init(argc, argv);
  return n < 0 ? -rte_errno : n;
}

/* Text of a DPDK error number (positive). */
const char *hd_dpdk_strerror(int err) { return rte_strerror(err); }

/* Ports DPDK probed (PCI devices on the allow list and --vdev devices). */
uint16_t hd_dpdk_port_count(void) { return rte_eth_dev_count_avail(); }

/* The port of a device name: a PCI address (0000:03:00.0) or a vdev name (net_tap0). */
int hd_dpdk_port_by_name(const char *name, uint16_t *port) {
  int r = rte_eth_dev_get_port_by_name(name, port);
  return r < 0 ? r : 0;
}

/*
 * Configures and starts `port` with one queue each way, an mbuf pool of `mbufs` buffers that hold
 * frames of `max_frame` bytes, and the port's MTU set to `mtu` (0 keeps the device's). Writes the
 * port's MAC address to `mac`. Returns 0 or -errno.
 */
int hd_dpdk_port_start(uint16_t port, uint32_t mbufs, uint16_t max_frame, uint16_t mtu, uint8_t mac[6]) {
  char pool_name[RTE_MEMPOOL_NAMESIZE];
  struct rte_eth_conf conf;
  struct rte_ether_addr addr;
  int r;

  if (!rte_eth_dev_is_valid_port(port)) return -ENODEV;
  if (pools[port] == NULL) {
    snprintf(pool_name, sizeof pool_name, "hd_pool_%u", (unsigned)port);
    pools[port] = rte_pktmbuf_pool_create(pool_name, mbufs, 256, 0,
                                          (uint16_t)(max_frame + RTE_PKTMBUF_HEADROOM),
                                          rte_eth_dev_socket_id(port));
    if (pools[port] == NULL) return -rte_errno;
  }
  memset(&conf, 0, sizeof conf);
  if ((r = rte_eth_dev_configure(port, 1, 1, &conf)) < 0) return r;
  if (mtu != 0 && (r = rte_eth_dev_set_mtu(port, mtu)) < 0 && r != -ENOTSUP) return r;
  if ((r = rte_eth_rx_queue_setup(port, 0, 1024, rte_eth_dev_socket_id(port), NULL, pools[port])) < 0) return r;
  if ((r = rte_eth_tx_queue_setup(port, 0, 1024, rte_eth_dev_socket_id(port), NULL)) < 0) return r;
  if ((r = rte_eth_dev_start(port)) < 0) return r;
  if ((r = rte_eth_macaddr_get(port, &addr)) < 0) return r;
  memcpy(mac, addr.addr_bytes, 6);
  return 0;
}

/*
 * Receives up to `max` frames into `buf`, frame i at i * stride, its length in lens[i]. A frame
 * longer than `stride` (or in several segments) is dropped and counted in *dropped.
 * Returns the number of frames written.
 */
uint16_t hd_dpdk_rx(uint16_t port, uint8_t *buf, uint32_t stride, uint32_t *lens, uint16_t max, uint32_t *dropped) {
  struct rte_mbuf *pkts[HD_BURST];
  uint16_t got = 0;
  while (got < max) {
    uint16_t want = (uint16_t)(max - got < HD_BURST ? max - got : HD_BURST);
    uint16_t n = rte_eth_rx_burst(port, 0, pkts, want);
    for (uint16_t i = 0; i < n; i++) {
      struct rte_mbuf *m = pkts[i];
      if (m->nb_segs == 1 && m->pkt_len <= stride) {
        memcpy(buf + (size_t)got * stride, rte_pktmbuf_mtod(m, const uint8_t *), m->pkt_len);
        lens[got++] = m->pkt_len;
      } else {
        (*dropped)++;
      }
      rte_pktmbuf_free(m);
    }
    if (n < want) break;
  }
  return got;
}

/*
 * Sends `n` frames, frame i at buf + offs[i] with length lens[i]. Returns how many the device
 * took; the caller sends the rest again (or drops them) as it sees fit.
 */
uint16_t hd_dpdk_tx(uint16_t port, const uint8_t *buf, const uint32_t *offs, const uint32_t *lens, uint16_t n) {
  struct rte_mbuf *pkts[HD_BURST];
  uint16_t sent = 0;
  while (sent < n) {
    uint16_t want = (uint16_t)(n - sent < HD_BURST ? n - sent : HD_BURST);
    uint16_t made = 0;
    for (; made < want; made++) {
      uint32_t len = lens[sent + made];
      struct rte_mbuf *m = rte_pktmbuf_alloc(pools[port]);
      if (m == NULL) break;
      char *dst = rte_pktmbuf_append(m, (uint16_t)len);
      if (dst == NULL || len > UINT16_MAX) {
        rte_pktmbuf_free(m);
        break;
      }
      memcpy(dst, buf + offs[sent + made], len);
      pkts[made] = m;
    }
    uint16_t took = made == 0 ? 0 : rte_eth_tx_burst(port, 0, pkts, made);
    for (uint16_t i = took; i < made; i++) rte_pktmbuf_free(pkts[i]);
    sent = (uint16_t)(sent + took);
    if (took < want) break;
  }
  return sent;
}

/* Stops and closes a port (its pool stays for a later start). Returns 0 or -errno. */
int hd_dpdk_port_close(uint16_t port) {
  int r = rte_eth_dev_stop(port);
  if (r < 0 && r != -ENOTSUP) return r;
  return rte_eth_dev_close(port);
}
