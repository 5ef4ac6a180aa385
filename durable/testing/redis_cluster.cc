#include "tickwheel/durable/testing/redis_cluster.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"

#include "tickwheel/timer/clock.h"

namespace tickwheel::durable::testing {
namespace {

int64_t Now() { return RealClock::MonotonicNanos(); }

}  // namespace

absl::StatusOr<std::unique_ptr<RedisCluster>> RedisCluster::Start(
    Options options) {
  std::unique_ptr<RedisCluster> cluster(new RedisCluster());
  if (absl::Status s = cluster->Create(options); !s.ok()) return s;
  return cluster;
}

absl::Status RedisCluster::Create(const Options& options) {
  if (options.masters < 1 || options.masters > 64 || options.replicas < 0 ||
      options.replicas > 4) {
    return absl::InvalidArgumentError(
        fmt::format("RedisCluster: {} masters with {} replicas each; want "
                    "[1, 64] masters and [0, 4] replicas",
                    options.masters, options.replicas));
  }
  masters_ = options.masters;
  replicas_ = options.replicas;
  const int nodes = options.masters * (1 + options.replicas);
  for (int i = 0; i < nodes; ++i) {
    RedisServer::Options o;
    o.ready_timeout = options.ready_timeout;
    // nodes.conf lands in the server's own folder (--dir).
    o.extra_args = {
        "--cluster-enabled",
        "yes",
        "--cluster-config-file",
        "nodes.conf",
        "--cluster-node-timeout",
        std::to_string(absl::ToInt64Milliseconds(options.node_timeout))};
    o.extra_args.insert(o.extra_args.end(), options.extra_args.begin(),
                        options.extra_args.end());
    absl::StatusOr<std::unique_ptr<RedisServer>> node = RedisServer::Start(o);
    if (!node.ok()) return node.status();
    nodes_.push_back(*std::move(node));
  }
  const int64_t deadline =
      Now() + absl::ToInt64Nanoseconds(options.ready_timeout);
  if (absl::Status s = Join(deadline); !s.ok()) return s;
  return WaitOk(options.ready_timeout);
}

absl::Status RedisCluster::Join(int64_t deadline) {
  auto ok = [](absl::StatusOr<internal::RedisReply> r,
               std::string_view what) -> absl::Status {
    if (!r.ok()) return r.status();
    if (r->is_error()) {
      return absl::InternalError(fmt::format("{}: {}", what, r->str));
    }
    return absl::OkStatus();
  };
  // As redis-cli --cluster create does: equal slot ranges, and a config
  // epoch of its own per node, so that no epoch collision is left for the
  // cluster to resolve after the meeting.
  for (int i = 0; i < static_cast<int>(nodes_.size()); ++i) {
    RedisServer& node = *nodes_[static_cast<size_t>(i)];
    if (i < masters_) {
      const int lo = 16384 * i / masters_;
      const int hi = 16384 * (i + 1) / masters_ - 1;
      if (absl::Status s =
              ok(node.Command({"CLUSTER", "ADDSLOTSRANGE", std::to_string(lo),
                               std::to_string(hi)}),
                 "CLUSTER ADDSLOTSRANGE");
          !s.ok()) {
        return s;
      }
    }
    if (absl::Status s = ok(node.Command({"CLUSTER", "SET-CONFIG-EPOCH",
                                          std::to_string(i + 1)}),
                            "CLUSTER SET-CONFIG-EPOCH");
        !s.ok()) {
      return s;
    }
  }
  for (size_t i = 1; i < nodes_.size(); ++i) {
    if (absl::Status s =
            ok(nodes_[i]->Command({"CLUSTER", "MEET", "127.0.0.1",
                                   std::to_string(nodes_[0]->port())}),
               "CLUSTER MEET");
        !s.ok()) {
      return s;
    }
  }
  // A replica accepts REPLICATE once it knows its master, which the
  // gossip after the meeting tells it: try again until the deadline.
  for (size_t i = static_cast<size_t>(masters_); i < nodes_.size(); ++i) {
    const int master_port = nodes_[(i - static_cast<size_t>(masters_)) %
                                   static_cast<size_t>(masters_)]
                                ->port();
    absl::StatusOr<std::string> id = NodeId(master_port);
    if (!id.ok()) return id.status();
    absl::Status s;
    do {
      s = ok(nodes_[i]->Command({"CLUSTER", "REPLICATE", *id}),
             "CLUSTER REPLICATE");
      if (!s.ok()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    } while (!s.ok() && Now() < deadline);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status RedisCluster::WaitOk(absl::Duration timeout) {
  const int64_t deadline = Now() + absl::ToInt64Nanoseconds(timeout);
  std::string last;
  while (Now() < deadline) {
    bool all_ok = true;
    for (size_t i = 0; i < nodes_.size() && all_ok; ++i) {
      const RedisServer& node = *nodes_[i];
      if (!node.running()) continue;
      absl::StatusOr<internal::RedisReply> info =
          nodes_[i]->Command({"CLUSTER", "INFO"});
      if (!info.ok()) {
        last = info.status().ToString();
        all_ok = false;
        break;
      }
      if (info->str.find("cluster_state:ok") == std::string::npos ||
          info->str.find("cluster_slots_ok:16384") == std::string::npos ||
          info->str.find(fmt::format("cluster_known_nodes:{}",
                                     nodes_.size())) == std::string::npos) {
        last = fmt::format("port {}: {}", node.port(), info->str);
        all_ok = false;
        break;
      }
      // Replication linked, by role (a failover swaps them): a replica's
      // link to its master is up, and a master has a replica attached when
      // the cluster has replicas. WAIT (min_replicas_acked) counts only
      // such replicas.
      absl::StatusOr<internal::RedisReply> role = nodes_[i]->Command({"ROLE"});
      const bool linked =
          role.ok() && role->elements.size() >= 3 &&
          ((role->elements[0].str == "master" &&
            (replicas_ == 0 || !role->elements[2].elements.empty())) ||
           (role->elements[0].str == "slave" && role->elements.size() >= 4 &&
            role->elements[3].str == "connected"));
      if (!linked) {
        last =
            fmt::format("port {}: replication not linked yet: {}", node.port(),
                        role.ok() ? std::string() : role.status().ToString());
        all_ok = false;
        break;
      }
    }
    if (all_ok) return absl::OkStatus();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return absl::DeadlineExceededError(fmt::format(
      "the cluster did not reach cluster_state:ok on every node in {}: {}",
      absl::FormatDuration(timeout), last));
}

std::vector<std::string> RedisCluster::seeds() const {
  std::vector<std::string> out;
  for (const auto& node : nodes_) {
    out.push_back(fmt::format("127.0.0.1:{}", node->port()));
  }
  return out;
}

RedisServer* RedisCluster::Node(int port) {
  for (const auto& node : nodes_) {
    if (node->port() == port) return node.get();
  }
  return nullptr;
}

absl::StatusOr<internal::RedisReply> RedisCluster::Command(
    int port, std::vector<std::string> args, absl::Duration timeout) {
  RedisServer* node = Node(port);
  if (node == nullptr) {
    return absl::NotFoundError(fmt::format("no node on port {}", port));
  }
  return node->Command(std::move(args), timeout);
}

absl::StatusOr<std::string> RedisCluster::NodeId(int port) {
  absl::StatusOr<internal::RedisReply> r = Command(port, {"CLUSTER", "MYID"});
  if (!r.ok()) return r.status();
  if (r->is_error()) return absl::InternalError(r->str);
  return r->str;
}

absl::StatusOr<int> RedisCluster::MasterOfSlot(int slot) {
  absl::Status last = absl::UnavailableError("no node answered");
  for (const auto& node : nodes_) {
    absl::StatusOr<internal::RedisReply> r =
        node->Command({"CLUSTER", "SLOTS"});
    if (!r.ok()) {
      last = r.status();
      continue;
    }
    for (const internal::RedisReply& range : r->elements) {
      if (range.elements.size() < 3) continue;
      if (range.elements[0].AsInt() <= slot &&
          slot <= range.elements[1].AsInt() &&
          range.elements[2].elements.size() >= 2) {
        return static_cast<int>(range.elements[2].elements[1].AsInt());
      }
    }
    return absl::NotFoundError(fmt::format("slot {} has no master", slot));
  }
  return last;
}

absl::StatusOr<std::vector<int>> RedisCluster::MasterPorts() {
  std::vector<int> out;
  for (const auto& node : nodes_) {
    absl::StatusOr<internal::RedisReply> r = node->Command({"ROLE"});
    if (!r.ok()) continue;
    if (!r->elements.empty() && r->elements[0].str == "master") {
      out.push_back(node->port());
    }
  }
  return out;
}

absl::Status RedisCluster::MoveSlot(int slot, int to_port) {
  absl::StatusOr<int> from_port = MasterOfSlot(slot);
  if (!from_port.ok()) return from_port.status();
  if (*from_port == to_port) return absl::OkStatus();
  absl::StatusOr<std::string> from_id = NodeId(*from_port);
  absl::StatusOr<std::string> to_id = NodeId(to_port);
  if (!from_id.ok()) return from_id.status();
  if (!to_id.ok()) return to_id.status();
  if (absl::Status st = WaitEpochsAgree(absl::Seconds(30)); !st.ok()) {
    return st;
  }
  const std::string s = std::to_string(slot);
  auto check = [](absl::StatusOr<internal::RedisReply> r,
                  std::string_view what) -> absl::Status {
    if (!r.ok()) return r.status();
    if (r->is_error()) {
      return absl::InternalError(fmt::format("{}: {}", what, r->str));
    }
    return absl::OkStatus();
  };
  if (absl::Status st = check(
          Command(to_port, {"CLUSTER", "SETSLOT", s, "IMPORTING", *from_id}),
          "SETSLOT IMPORTING");
      !st.ok()) {
    return st;
  }
  if (absl::Status st = check(
          Command(*from_port, {"CLUSTER", "SETSLOT", s, "MIGRATING", *to_id}),
          "SETSLOT MIGRATING");
      !st.ok()) {
    return st;
  }
  for (;;) {
    absl::StatusOr<internal::RedisReply> keys =
        Command(*from_port, {"CLUSTER", "GETKEYSINSLOT", s, "100"});
    if (!keys.ok()) return keys.status();
    if (keys->elements.empty()) break;
    std::vector<std::string> migrate = {
        "MIGRATE", "127.0.0.1", std::to_string(to_port), "", "0",
        "5000",    "KEYS"};
    for (const internal::RedisReply& k : keys->elements) {
      migrate.push_back(k.str);
    }
    if (absl::Status st = check(Command(*from_port, migrate), "MIGRATE");
        !st.ok()) {
      return st;
    }
  }
  // The new owner first, then the old one, then the other masters, as
  // redis-cli does: a node that learns the change late redirects with MOVED
  // to the old owner, which redirects again.
  std::vector<int> order = {to_port, *from_port};
  absl::StatusOr<std::vector<int>> masters = MasterPorts();
  if (!masters.ok()) return masters.status();
  for (const int p : *masters) {
    if (p != to_port && p != *from_port) order.push_back(p);
  }
  for (const int p : order) {
    if (absl::Status st =
            check(Command(p, {"CLUSTER", "SETSLOT", s, "NODE", *to_id}),
                  "SETSLOT NODE");
        !st.ok()) {
      return st;
    }
  }
  return WaitSlotOwner(slot, to_port, absl::Seconds(30));
}

absl::Status RedisCluster::WaitSlotOwner(int slot, int port,
                                         absl::Duration timeout) {
  const int64_t deadline = Now() + absl::ToInt64Nanoseconds(timeout);
  std::string last;
  while (Now() < deadline) {
    bool all = true;
    for (const auto& node : nodes_) {
      if (!node->running()) continue;
      absl::StatusOr<int> owner = OwnerIn(node->port(), slot);
      if (!owner.ok() || *owner != port) {
        last = owner.ok()
                   ? fmt::format("port {} names {}", node->port(), *owner)
                   : owner.status().ToString();
        all = false;
        break;
      }
    }
    if (all) return absl::OkStatus();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return absl::DeadlineExceededError(fmt::format(
      "not every node names port {} the owner of slot {} after {}: {}", port,
      slot, absl::FormatDuration(timeout), last));
}

absl::Status RedisCluster::WaitEpochsAgree(absl::Duration timeout) {
  const int64_t deadline = Now() + absl::ToInt64Nanoseconds(timeout);
  std::string last;
  while (Now() < deadline) {
    // Each running node's view: node id -> config epoch, and the masters'.
    std::map<std::string, std::string> first;
    bool agree = true;
    for (const auto& node : nodes_) {
      if (!node->running()) continue;
      absl::StatusOr<internal::RedisReply> r =
          node->Command({"CLUSTER", "NODES"});
      if (!r.ok() || r->is_error()) {
        last = r.ok() ? r->str : r.status().ToString();
        agree = false;
        break;
      }
      // <id> <addr> <flags> <master> <ping-sent> <pong-recv> <config-epoch>
      std::map<std::string, std::string> view;
      std::set<std::string> master_epochs;
      bool shared_epoch = false;
      for (absl::string_view line : absl::StrSplit(r->str, '\n')) {
        const std::vector<absl::string_view> f =
            absl::StrSplit(line, ' ', absl::SkipEmpty());
        if (f.size() < 7) continue;
        view[std::string(f[0])] = std::string(f[6]);
        if (absl::StrContains(f[2], "master") &&
            !master_epochs.insert(std::string(f[6])).second) {
          shared_epoch = true;
        }
      }
      if (shared_epoch) {
        last = fmt::format("port {}: two masters share a config epoch",
                           node->port());
        agree = false;
        break;
      }
      if (first.empty()) {
        first = std::move(view);
      } else if (view != first) {
        last = fmt::format("port {} sees other config epochs", node->port());
        agree = false;
        break;
      }
    }
    if (agree) return absl::OkStatus();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return absl::DeadlineExceededError(
      fmt::format("the nodes do not agree on the config epochs after {}: {}",
                  absl::FormatDuration(timeout), last));
}

absl::Status RedisCluster::KillNode(int port) {
  RedisServer* node = Node(port);
  if (node == nullptr) {
    return absl::NotFoundError(fmt::format("no node on port {}", port));
  }
  return node->Kill();
}

absl::StatusOr<int> RedisCluster::WaitForPromotion(int slot, int old_port,
                                                   absl::Duration timeout) {
  const int64_t deadline = Now() + absl::ToInt64Nanoseconds(timeout);
  std::string last = "no node answered";
  while (Now() < deadline) {
    int owner = -1;
    bool agreed = true;
    for (const auto& node : nodes_) {
      if (!node->running()) continue;
      absl::StatusOr<int> o = OwnerIn(node->port(), slot);
      if (!o.ok() || *o == old_port || (owner != -1 && *o != owner)) {
        last = o.ok() ? fmt::format("port {} names {}", node->port(), *o)
                      : o.status().ToString();
        agreed = false;
        break;
      }
      owner = *o;
    }
    if (agreed && owner != -1) {
      absl::StatusOr<internal::RedisReply> role = Command(owner, {"ROLE"});
      if (role.ok() && !role->elements.empty() &&
          role->elements[0].str == "master") {
        return owner;
      }
      last =
          fmt::format("port {} is named the owner but is no master yet", owner);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return absl::DeadlineExceededError(
      fmt::format("slot {} did not fail over from port {} within {}: {}", slot,
                  old_port, absl::FormatDuration(timeout), last));
}

absl::Status RedisCluster::RestartNode(int port, absl::Duration timeout) {
  RedisServer* node = Node(port);
  if (node == nullptr) {
    return absl::NotFoundError(fmt::format("no node on port {}", port));
  }
  if (absl::Status s = node->Restart(); !s.ok()) return s;
  const int64_t deadline = Now() + absl::ToInt64Nanoseconds(timeout);
  std::string last;
  while (Now() < deadline) {
    // A replica's ROLE: slave, master host, master port, link state, offset.
    absl::StatusOr<internal::RedisReply> role = node->Command({"ROLE"});
    if (role.ok() && role->elements.size() >= 4 &&
        role->elements[0].str == "slave" &&
        role->elements[3].str == "connected") {
      return WaitOk(absl::Nanoseconds(std::max<int64_t>(deadline - Now(), 0)));
    }
    last = role.ok() ? fmt::format(
                           "ROLE: {} elements, first {}", role->elements.size(),
                           role->elements.empty() ? std::string()
                                                  : role->elements[0].str)
                     : role.status().ToString();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return absl::DeadlineExceededError(
      fmt::format("port {} did not rejoin as a connected replica within {}: {}",
                  port, absl::FormatDuration(timeout), last));
}

absl::StatusOr<int> RedisCluster::OwnerIn(int port, int slot) {
  absl::StatusOr<internal::RedisReply> r =
      Command(port, {"CLUSTER", "SLOTS"}, absl::Seconds(2));
  if (!r.ok()) return r.status();
  for (const internal::RedisReply& range : r->elements) {
    if (range.elements.size() < 3) continue;
    if (range.elements[0].AsInt() <= slot &&
        slot <= range.elements[1].AsInt() &&
        range.elements[2].elements.size() >= 2) {
      return static_cast<int>(range.elements[2].elements[1].AsInt());
    }
  }
  return absl::NotFoundError(
      fmt::format("port {}: slot {} has no master", port, slot));
}

}  // namespace tickwheel::durable::testing
