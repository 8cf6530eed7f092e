// RDMA netlink (NLDEV) requests: messages are bare attributes after the nlmsghdr.
#include "doctor/rdma_link.h"

#include <linux/netlink.h>
#include <rdma/rdma_netlink.h>

namespace fabemu::doctor {

namespace {

constexpr uint16_t nldev(int op) {
  return RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, op);
}

}  // namespace

Result<void> add_rxe_link(NetlinkSocket& rdma, const std::string& name, const std::string& netdev) {
  NetlinkMessage m(nldev(RDMA_NLDEV_CMD_NEWLINK), 0);
  m.put_string(RDMA_NLDEV_ATTR_DEV_NAME, name);
  m.put_string(RDMA_NLDEV_ATTR_LINK_TYPE, "rxe");
  m.put_string(RDMA_NLDEV_ATTR_NDEV_NAME, netdev);
  auto r = rdma.transact(m, "creating rxe device " + name + " on " + netdev);
  if (!r) return r.error();
  return ok();
}

Result<uint32_t> rdma_device_index(NetlinkSocket& rdma, const std::string& name) {
  // NLDEV_CMD_GET answers by index only, so find the name in a dump.
  NetlinkMessage m(nldev(RDMA_NLDEV_CMD_GET), NLM_F_DUMP);
  auto replies = rdma.transact(m, "listing RDMA devices");
  if (!replies) return replies.error();
  for (const std::string& reply : *replies) {
    bool found = false;
    uint32_t index = 0;
    bool have_index = false;
    for (const NetlinkAttr& a : parse_attrs(reply)) {
      if (a.type == RDMA_NLDEV_ATTR_DEV_NAME && a.as_string() == name) found = true;
      if (a.type == RDMA_NLDEV_ATTR_DEV_INDEX) {
        index = a.as_u32();
        have_index = true;
      }
    }
    if (found && have_index) return index;
  }
  return make_error("RDMA device " + name + " not found after creating it", ENODEV);
}

Result<void> delete_rdma_link(NetlinkSocket& rdma, uint32_t index) {
  NetlinkMessage m(nldev(RDMA_NLDEV_CMD_DELLINK), 0);
  m.put_u32(RDMA_NLDEV_ATTR_DEV_INDEX, index);
  auto r = rdma.transact(m, "deleting RDMA device " + std::to_string(index));
  if (!r) return r.error();
  return ok();
}

}  // namespace fabemu::doctor
