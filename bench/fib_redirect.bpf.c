// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* bench/frame_cost.py's floor for a BPF switch: at a router's ingress, the kernel's FIB looked up
 * with bpf_fib_lookup (its neighbour's MAC included), TTL decremented, MACs rewritten and the
 * frame redirected to the egress port, skipping the IP stack. What it does not handle (not IPv4,
 * TTL expiring, no route or neighbour yet) goes to the stack. Not part of fabemu's datapath. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/pkt_cls.h>

#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#ifndef AF_INET
#define AF_INET 2
#endif

SEC("tc")
int fib_redirect(struct __sk_buff* skb) {
  void* data = (void*)(long)skb->data;
  void* end = (void*)(long)skb->data_end;
  struct ethhdr* eth = data;
  if ((void*)(eth + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP)) return TC_ACT_OK;
  struct iphdr* ip = (void*)(eth + 1);
  if ((void*)(ip + 1) > end || ip->ttl <= 1) return TC_ACT_OK;
  struct bpf_fib_lookup p = {};
  p.family = AF_INET;
  p.tos = ip->tos;
  p.l4_protocol = ip->protocol;
  p.tot_len = bpf_ntohs(ip->tot_len);
  p.ipv4_src = ip->saddr;
  p.ipv4_dst = ip->daddr;
  p.ifindex = skb->ingress_ifindex;
  if (bpf_fib_lookup(skb, &p, sizeof(p), 0) != BPF_FIB_LKUP_RET_SUCCESS) return TC_ACT_OK;
  /* The TTL's decrement in the checksum, as the kernel's ip_decrease_ttl does. */
  __u32 check = ip->check;
  check += bpf_htons(0x0100);
  ip->check = (__u16)(check + (check >= 0xFFFF));
  ip->ttl--;
  __builtin_memcpy(eth->h_dest, p.dmac, ETH_ALEN);
  __builtin_memcpy(eth->h_source, p.smac, ETH_ALEN);
  return bpf_redirect(p.ifindex, 0);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
