/* The link model's map layout, shared by link_shaper.bpf.c and the C++ side (one copy). */
#ifndef FABEMU_EBPF_LINK_SHAPER_H_
#define FABEMU_EBPF_LINK_SHAPER_H_

#include <linux/bpf.h> /* struct bpf_spin_lock */
#include <linux/types.h>

/* Maps are keyed by the ifindex of the shaped port. ifindex is unique only within one network
 * namespace while one program and one set of maps serve every namespace of a lab, so the lab
 * must give its ports lab-unique ifindexes; fabemu_ports records which namespace owns each key
 * so that a clash is refused at attach time instead of silently sharing a shape. */
#define FABEMU_MAX_LINKS 16384

/* Queue-delay histogram: bucket 0 holds delays below 1024 ns, bucket i (1..15) holds
 * [2^(9+i), 2^(10+i)) ns, the last bucket everything from ~16.8 ms up. */
#define FABEMU_HIST_BUCKETS 16
#define FABEMU_HIST_SHIFT 10

/* Probabilities are u32 fractions of 2^32; FABEMU_PROB_ALWAYS is certainty (1.0 itself does
 * not fit in 32 bits). */
#define FABEMU_PROB_ALWAYS 0xffffffffU

enum fabemu_link_flags {
  FABEMU_LINK_DOWN = 1U << 0,       /* drop every packet */
  FABEMU_LINK_NO_REORDER = 1U << 1, /* jitter never lets a packet leave before its elder */
  FABEMU_LINK_POLICER = 1U << 2,    /* no fq: account the virtual queue, never set tstamp */
  FABEMU_LINK_GE = 1U << 3,         /* Gilbert-Elliott loss instead of Bernoulli */
  /* PFC holds frames in the port's queue (the lab's BPF qdisc, pfc_qdisc.bpf.c): this program
   * marks the lossless class and leaves pausing and the buffers to the qdisc. */
  FABEMU_LINK_PFC_QUEUE = 1U << 4,
  /* The switches seed their own ECMP hashes (net.ipv4.fib_multipath_hash_seed): leave the
   * flow's hash as the sender made it, so that every hop steers it to the same CPU. */
  FABEMU_LINK_KEEP_HASH = 1U << 5,
  /* A host's own port where the lab runs DCQCN (rdma: {cc: dcqcn}): its RoCEv2 frames are paced
   * by their QP's rate (ebpf/dcqcn.h) before the link takes them. */
  FABEMU_LINK_DCQCN = 1U << 6,
};

/* skb->mark bit of a frame of the lossless class, for the BPF qdisc behind the program (the
 * mark does not leave the namespace: a veth scrubs it). */
#define FABEMU_LOSSLESS_MARK 0x40000000U
/* The BPF qdisc's kind as built; user space gives each lab's registration a name of its own
 * of the same length (a qdisc kind is global to the kernel). */
#define FABEMU_PFCQ_ID_PLACEHOLDER "fabemu_pfcq_id0"

/* The lossless class's fixed UDP port when the class is RoCEv2 (IANA). */
#define FABEMU_ROCEV2_PORT 4791

/* One direction of one link, written by user space, read by the datapath. Zero means "not
 * limited" for rate and both queue limits and "off" for delay, jitter, loss and ECN. */
struct fabemu_link_cfg {
  __u64 rate_bps;         /* bit/s of wire bytes (the L2 frame + overhead_bytes) */
  __u64 delay_ns;         /* added to every departure (propagation) */
  __u64 jitter_ns;        /* departure moves uniformly within [-jitter, +jitter] */
  __u64 queue_ns;         /* tail drop when a packet would wait longer than this */
  __u64 queue_bytes;      /* tail drop when the backlog including the packet exceeds this */
  __u64 ecn_threshold_ns; /* set CE on ECT packets that wait longer than this */
  __u64 seed;             /* PRNG seed; a new seed restarts the loss and jitter sequences */
  __u32 loss;             /* Bernoulli drop probability */
  __u32 ge_p;             /* Gilbert-Elliott: P(good -> bad) per packet */
  __u32 ge_r;             /* P(bad -> good) per packet */
  __u32 ge_loss_bad;      /* drop probability in the bad state */
  __u32 ge_loss_good;     /* drop probability in the good state */
  __u32 flags;            /* enum fabemu_link_flags */
  __u32 overhead_bytes; /* added to each frame's length for the rate (e.g. 24: preamble+FCS+IFG) */
  __u32 pfc_peer;       /* PFC on this direction: the key of the far end's port, whose switch's
                           buffer for frames from this link fabemu_pfc_cfg[pfc_peer] describes */
  __u64 ecn_threshold_bytes; /* set CE on ECT packets that find more than this backlog */
  /* The lab's lossless class: frames to this UDP port (RoCEv2: 4791; 0: none) or with a DSCP
   * whose bit is set here. The same in every direction of a lab. */
  __u64 lossless_dscp;
  __u32 lossless_udp_port;
  __u32 ecn_pmax; /* RED's probability at ecn_kmax_bytes (below) */
  /* PFC on this direction (with pfc_peer): the far end's buffer for this link, as in
   * fabemu_pfc_cfg[pfc_peer], and the watchdog of this port's lossless queue. */
  __u64 pfc_xoff_bytes;
  __u64 pfc_xon_bytes;
  __u64 pfc_slot_ns;
  __u64 pfc_watchdog_ns; /* a pause longer than this drops the class instead (0: never) */
  /* Damage on the wire: the probability that a frame arrives corrupted (the next hop discards
   * it, as a port discards a frame whose FCS fails) or twice. Drawn from the same PRNG. */
  __u32 corrupt;
  __u32 duplicate;
  /* ECN marking like a switch's RED: an ECT frame that finds a backlog above ecn_kmin_bytes is
   * marked with a probability rising linearly to ecn_pmax (above) at ecn_kmax_bytes, and always
   * above it (0: off). Drawn from the same PRNG, after jitter. 32 bits: buffers stay below
   * MAX_QUEUE_BYTES, and the program's copy of this struct sits on a stack Linux 6.1 holds to
   * 512 bytes over its deepest call chain. */
  __u32 ecn_kmin_bytes;
  __u32 ecn_kmax_bytes;
  /* The switch's shared buffer this port queues in (fabemu_buffer_cfg; 0: a queue of its own):
   * its backlog may be at most alpha x the buffer still free. */
  __u32 buffer_id;
  __u32 reserved;
};

/* The program's verdict for a frame the link loses: a redirect to this ifindex, which no device
 * has, so that the sender is not told (BPF_PROG_TEST_RUN returns TC_ACT_REDIRECT for it). */
#define FABEMU_NO_IFINDEX 0

/* skb->mark bit of a duplicate on its way through the port again: it is not duplicated twice. */
#define FABEMU_DUP_MARK 0x80000000U

/* Priority flow control (802.1Qbb) for the lossless class, by ingress port: the buffer a switch
 * (or host) holds for frames that arrived over one link, keyed by the ifindex of the port they
 * arrived on. Its egress programs add each lossless frame until the departure time they give
 * it; the far end's egress program holds the class back while the buffer is over Xoff, until
 * it drains under Xon. User space writes the config; the datapath alone the state. */
#define FABEMU_PFC_SLOTS 32

/* xoff_bytes of `pfc: {xoff: dynamic}`: Xoff is alpha x the free bytes of the shared buffer
 * buffer_id (none: never), and the pause ends xon_bytes below it. */
#define FABEMU_PFC_XOFF_DYNAMIC (1ULL << 40)

struct fabemu_pfc_cfg {
  __u64 xoff_bytes; /* pause the link's lossless class from this occupancy */
  __u64 xon_bytes;  /* resume at or below this */
  __u64 slot_ns;    /* the occupancy's time resolution: bytes leave in slots this long */
  __u32 buffer_id;  /* with FABEMU_PFC_XOFF_DYNAMIC: the receiving switch's shared buffer */
  /* The datapath's working copy of a dynamic Xoff: xoff_bytes and xon_bytes as they stand now,
   * the pause ending this far below Xoff (0 in the map, whose xon_bytes is the offset). */
  __u32 xon_offset;
};

/* Bytes by the slot (departure time / slot_ns) in which they leave; slot i holds the epoch with
 * epoch % FABEMU_PFC_SLOTS == i, stale when its epoch has passed. Bytes are added atomically;
 * the rest is read and written without a lock (a frame scheduled meanwhile on another CPU is
 * seen by the next one). */
struct fabemu_occupancy {
  __u64 slot_epoch[FABEMU_PFC_SLOTS];
  __u64 slot_bytes[FABEMU_PFC_SLOTS];
};

struct fabemu_pfc_state {
  __u64 paused; /* the hysteresis: 1 from Xoff until Xon */
  struct fabemu_occupancy occ;
};

/* A switch's shared buffer (switches: {buffer, alpha}), keyed by the id its ports' configs
 * name (cfg.buffer_id): every frame one of its ports admits occupies it until it leaves, and a
 * port may hold at most alpha x the bytes still free (the dynamic threshold of Choudhury and
 * Hahne, as switch ASICs share their buffers). User space writes the config; the datapath alone
 * the state. */
#define FABEMU_BUFFER_ALPHA_ONE 256 /* alpha in 1/256 */
struct fabemu_buffer_cfg {
  __u64 bytes;   /* the buffer */
  __u64 slot_ns; /* the occupancy's time resolution */
  __u32 alpha;   /* in 1/FABEMU_BUFFER_ALPHA_ONE */
  __u32 reserved;
};

struct fabemu_buffer_state {
  __u64 peak_bytes; /* the most an admitted frame found there (with itself) */
  struct fabemu_occupancy occ;
};

/* The datapath's memory of a link, written only by the program under `lock`. User space
 * creates it zeroed; a zeroed or re-seeded state starts its PRNG from cfg.seed. */
struct fabemu_link_state {
  struct bpf_spin_lock lock;
  __u32 ge_bad;      /* Gilbert-Elliott: 1 while in the bad state */
  __u64 next_ns;     /* virtual clock: when the link is free to send the next frame */
  __u64 rate_rem;    /* remainder of the last transmission-time division, carried so
                        that rates which do not divide 8e9 do not drift */
  __u64 last_tstamp; /* the last departure handed out, for FABEMU_LINK_NO_REORDER */
  __u64 prng;        /* splitmix64 state */
  __u64 seeded_from; /* cfg.seed that `prng` started from */
  __u64 seeded;      /* 0 until the PRNG has been seeded */
  /* PFC of the lossless class on this direction. */
  __u64 ll_next_ns;  /* the class's own clock: its frames keep their order while held */
  __u64 pause_until; /* the end of the current (or last) pause */
  __u64 pause_since; /* when the current pause began */
};

/* Per-CPU counters of a link; user space sums the CPUs. */
struct fabemu_link_counters {
  __u64 packets; /* handed on (passed or scheduled) */
  __u64 bytes;
  __u64 drop_down;
  __u64 drop_loss;
  __u64 drop_queue;
  __u64 ce_marks;
  __u64 queue_delay_hist[FABEMU_HIST_BUCKETS]; /* of packets handed on */
  __u64 lossless_packets;                      /* of the lossless class, handed on */
  __u64 pause_ns;       /* the lossless class held back by PFC (the union of pauses) */
  __u64 pause_events;   /* pauses begun: the XOFF a switch would have sent */
  __u64 drop_watchdog;  /* lossless frames dropped by the PFC watchdog */
  __u64 lossless_drops; /* lossless frames dropped, whatever the cause (watchdog included) */
  __u64 corrupted;      /* handed on damaged: the next hop drops them */
  __u64 duplicated;     /* handed on twice */
};

/* Who shapes a key: the namespace (nsfs device and inode) and name of the port, written by
 * user space at attach time and never read by the datapath. */
struct fabemu_port {
  __u64 netns_dev;
  __u64 netns_ino;
  __u8 ifname[16];
};

#endif /* FABEMU_EBPF_LINK_SHAPER_H_ */
