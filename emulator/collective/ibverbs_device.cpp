// RDMA device lookup and checks before Gloo's ibverbs transport opens it.
#include "collective/ibverbs_device.h"

#include <infiniband/verbs.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include <gloo/transport/ibverbs/device.h>

namespace fabemu::collective {
namespace {

Result<std::vector<std::string>> device_names() {
  int count = 0;
  ibv_device** list = ibv_get_device_list(&count);
  if (!list) {
    return errno_error(
        "listing RDMA devices (no RDMA support in this kernel? soft-RoCE needs rdma_rxe; or "
        "use --transport tcp)");
  }
  std::vector<std::string> names;
  for (int i = 0; i < count; ++i) names.push_back(ibv_get_device_name(list[i]));
  ibv_free_device_list(list);
  std::sort(names.begin(), names.end());
  return names;
}

std::string listed(const std::vector<std::string>& names) {
  if (names.empty())
    return "none (a soft-RoCE device comes from `rdma link add NAME type rxe "
           "netdev IFACE`)";
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// Port state and GID: the two things a fresh soft-RoCE device gets wrong, which Gloo would
// report only as a failed connect.
Result<void> check_port(const std::string& name, int port, int gid_index) {
  int count = 0;
  ibv_device** list = ibv_get_device_list(&count);
  if (!list) return errno_error("listing RDMA devices");
  ibv_context* ctx = nullptr;
  for (int i = 0; i < count && !ctx; ++i) {
    if (name == ibv_get_device_name(list[i])) ctx = ibv_open_device(list[i]);
  }
  ibv_free_device_list(list);
  if (!ctx) return errno_error("opening RDMA device " + name);
  Result<void> result = ok();
  ibv_port_attr attr{};
  const std::string where = name + " port " + std::to_string(port);
  if (ibv_query_port(ctx, static_cast<uint8_t>(port), &attr) != 0) {
    result = errno_error("querying " + where);
  } else if (attr.state != IBV_PORT_ACTIVE) {
    result = make_error(where + " is " + ibv_port_state_str(attr.state) +
                        ", not ACTIVE (is its netdev up?)");
  } else if (gid_index >= attr.gid_tbl_len) {
    result = make_error(where + " has " + std::to_string(attr.gid_tbl_len) +
                        " GIDs; there is no GID index " + std::to_string(gid_index));
  } else {
    ibv_gid gid{};
    static const ibv_gid kZero{};
    if (ibv_query_gid(ctx, static_cast<uint8_t>(port), gid_index, &gid) != 0) {
      result = errno_error("querying GID " + std::to_string(gid_index) + " of " + where);
    } else if (std::memcmp(&gid, &kZero, sizeof gid) == 0) {
      result = make_error("GID index " + std::to_string(gid_index) + " of " + where +
                          " is empty (soft-RoCE puts the RoCEv2 GID of the netdev's IPv4 "
                          "address at index 1; set NCCL_IB_GID_INDEX or --gid-index)");
    }
  }
  ibv_close_device(ctx);
  return result;
}

}  // namespace

Result<std::shared_ptr<gloo::transport::Device>> open_ibverbs_device(const GlooSettings& settings) {
  auto names = device_names();
  if (!names) return names.error();
  std::string name = settings.ib_dev;
  if (name.empty()) {
    if (names->size() != 1) {
      return make_error("which RDMA device? set NCCL_IB_HCA or --ib-dev; available: " +
                        listed(*names));
    }
    name = names->front();
  } else if (std::find(names->begin(), names->end(), name) == names->end()) {
    return make_error("RDMA device '" + name + "' not found; available: " + listed(*names));
  }
  FABEMU_TRY(check_port(name, settings.ib_port, settings.gid_index));
  try {
    gloo::transport::ibverbs::attr attr;
    attr.name = name;
    attr.port = settings.ib_port;
    attr.index = settings.gid_index;
    return gloo::transport::ibverbs::CreateDevice(attr);
  } catch (const std::exception& e) {
    return make_error("opening RDMA device " + name + " for Gloo: " + e.what());
  }
}

}  // namespace fabemu::collective
