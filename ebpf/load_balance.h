/* Load balancing on the switches' datapath (fabric.load_balance): the map layout shared by
 * link_shaper.bpf.c's fabemu_balance program and the C++ side (shaping/load_balancer.h).
 *
 * A switch port's ingress program looks the frame's IPv4 destination up in the switch's ECMP
 * routes (an LPM trie keyed by switch and prefix), chooses one of the route's members by the
 * group's mode, and redirects the frame to that member's port with the kernel's neighbour for
 * the next hop (bpf_redirect_neigh); the member port's egress program (the link model) shapes it
 * as any frame. Frames to destinations without a group (one next hop, the switch itself, ARP)
 * go on to the kernel's FIB. Members are ports of the switch, keyed like the link model by
 * their lab-unique ifindex, so the program reads the member link's shape (down) and virtual
 * queue (backlog) straight from the link model's maps. */
#ifndef FABEMU_EBPF_LOAD_BALANCE_H_
#define FABEMU_EBPF_LOAD_BALANCE_H_

#include <linux/types.h>

#define FABEMU_LB_MAX_MEMBERS 16
#define FABEMU_LB_MAX_GROUPS 16384
#define FABEMU_LB_MAX_ROUTES 65536
#define FABEMU_LB_MAX_FLOWS 262144
/* A route's value when the kernel's FIB has the frame: a more specific route than a group's
 * (a connected port, a single next hop) must win the longest-prefix match as in the FIB. */
#define FABEMU_LB_NO_GROUP 0xffffffffU
/* A route's value for a subnet of a host port: the FIB has the frame too, and this switch is its
 * last hop, where the order in which a flow's frames arrived is counted (fabemu_lb_order). */
#define FABEMU_LB_LAST_HOP 0xfffffffeU
#define FABEMU_LB_MAX_ORDER_FLOWS 65536

enum fabemu_lb_mode {
  FABEMU_LB_ECMP = 0,     /* static: the hash picks the member for the flow's life */
  FABEMU_LB_FLOWLET = 1,  /* a flow idle for gap_ns takes a member drawn afresh */
  FABEMU_LB_SPRAY = 2,    /* each frame its own member (order: round robin or random) */
  FABEMU_LB_ADAPTIVE = 3, /* the member with the least backlog, per frame or per flowlet */
};

enum fabemu_lb_flags {
  FABEMU_LB_HASH_L4 = 1U << 0,    /* ports in the hash (else addresses and protocol only) */
  FABEMU_LB_HASH_QP = 1U << 1,    /* RoCEv2: the BTH destination QP in the hash too */
  FABEMU_LB_RANDOM = 1U << 2,     /* spray: a random member, else round robin */
  FABEMU_LB_PER_FLOWLET = 1U << 3 /* adaptive: decide once per flowlet, else per frame */
};

/* The key of a route: the switch (fabemu_lb_ports' value, host order: it matches whole) and the
 * IPv4 destination (network order); prefixlen counts the switch's 32 bits too. */
struct fabemu_lb_route_key {
  __u32 prefixlen;
  __u32 switch_id;
  __u32 dst;
};

struct fabemu_lb_member {
  __u32 ifindex; /* the switch's port, lab-unique like the link model's keys */
  __u32 nexthop; /* IPv4 of the next hop, network order */
};

struct fabemu_lb_group {
  __u32 mode;   /* enum fabemu_lb_mode */
  __u32 flags;  /* enum fabemu_lb_flags */
  __u32 n;      /* members in use, 1..FABEMU_LB_MAX_MEMBERS */
  __u32 seed;   /* the switch's hash seed, from the scenario's */
  __u64 gap_ns; /* flowlet gap, wall-clock ns (dilated) */
  struct fabemu_lb_member members[FABEMU_LB_MAX_MEMBERS];
};

/* A flow's member and when it last sent, for flowlets. */
struct fabemu_lb_flow_key {
  __u32 group;
  __u32 hash;
};
struct fabemu_lb_flow {
  __u64 last_ns;
  __u32 member;
  __u32 flowlets; /* flowlets begun after the first: the draw of the next one */
};

/* Per-CPU counters of a group; user space sums the CPUs. */
struct fabemu_lb_counters {
  __u64 frames[FABEMU_LB_MAX_MEMBERS]; /* sent to each member (a super-frame counts its frames) */
  __u64 bytes[FABEMU_LB_MAX_MEMBERS];
  __u64 moves;      /* a flow (flowlet) or a frame (spray, adaptive) left its last member */
  __u64 down_skips; /* the chosen member's link was down and another took the frame */
  __u64 no_member;  /* every member down: the frame went to the kernel's FIB */
};

/* The order of a flow's frames at its last hop, against the sequence its sender gave them: TCP's
 * IPv4 ID (Linux numbers a connected socket's packets, a super-frame's segments and every
 * retransmission afresh), or RoCEv2's BTH PSN per destination QP (where go-back-N's resends
 * count too). A frame below the next expected number arrived out of order (RFC 4737's
 * "reordered"). Other frames (UDP, whose IDs are 0 or shared) are not counted. */
struct fabemu_lb_order_key {
  __u32 saddr, daddr; /* network order */
  __u32 ports;        /* TCP's ports as on the wire; RoCEv2: the destination QP */
  __u32 proto;        /* IPPROTO_TCP, or FABEMU_LB_ORDER_ROCE */
};
#define FABEMU_LB_ORDER_ROCE 0x100U
struct fabemu_lb_order {
  __u64 frames;    /* arrived (a super-frame counts its frames) */
  __u64 reordered; /* ... below the next expected number */
  __u32 next;      /* the sequence number expected next */
  __u32 pad;
};

#endif /* FABEMU_EBPF_LOAD_BALANCE_H_ */
