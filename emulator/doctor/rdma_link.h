// Soft-RoCE (rxe) link creation and removal through RDMA netlink, as `rdma link add` does it.
#pragma once

#include <cstdint>
#include <string>

#include "util/netlink.h"
#include "util/result.h"

namespace fabemu::doctor {

// `rdma link add <name> type rxe netdev <netdev>`.
Result<void> add_rxe_link(NetlinkSocket& rdma, const std::string& name, const std::string& netdev);

// The index of the RDMA device called `name`, from a device dump.
Result<uint32_t> rdma_device_index(NetlinkSocket& rdma, const std::string& name);

// `rdma link delete <name>`.
Result<void> delete_rdma_link(NetlinkSocket& rdma, uint32_t index);

}  // namespace fabemu::doctor
