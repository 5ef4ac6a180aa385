#include "tickwheel/durable/testing/redis_cluster.h"

#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "tickwheel/timer/clock.h"

extern char** environ;

namespace tickwheel::durable::testing {
namespace {

int64_t Now() { return RealClock::MonotonicNanos(); }

std::string CliBinary() {
  if (const char* env = std::getenv("TICKWHEEL_REDIS_CLI")) return env;
  return "redis-cli";
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  std::string text = s.str();
  if (text.size() > 3000) text = text.substr(text.size() - 3000);
  return text;
}

// Runs `args` (args[0] from PATH) to its end, its output in `log`: its exit
// status, or why it could not run.
absl::Status RunToEnd(std::vector<std::string> args, const std::string& log) {
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(),
                                   O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, args[0].c_str(), &actions, nullptr,
                              argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    return absl::FailedPreconditionError(
        fmt::format("cannot start {}: {}; install redis-tools or set "
                    "TICKWHEEL_REDIS_CLI",
                    args[0], std::strerror(rc)));
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return absl::InternalError(fmt::format("{} failed (status {}): {}", args[0],
                                           status, ReadFile(log)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<RedisCluster>> RedisCluster::Start(
    Options options) {
  std::unique_ptr<RedisCluster> cluster(new RedisCluster());
  if (absl::Status s = cluster->Create(options); !s.ok()) return s;
  return cluster;
}

absl::Status RedisCluster::Create(const Options& options) {
  for (int i = 0; i < kNodes; ++i) {
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
    absl::StatusOr<std::unique_ptr<RedisServer>> node = RedisServer::Start(o);
    if (!node.ok()) return node.status();
    nodes_.push_back(*std::move(node));
  }
  std::vector<std::string> args = {CliBinary(), "--cluster", "create"};
  for (const std::string& seed : seeds()) args.push_back(seed);
  args.insert(args.end(), {"--cluster-replicas", "1", "--cluster-yes"});
  if (absl::Status s = RunToEnd(args, nodes_[0]->dir() + "/create.log");
      !s.ok()) {
    return s;
  }
  return WaitOk(options.ready_timeout);
}

absl::Status RedisCluster::WaitOk(absl::Duration timeout) {
  const int64_t deadline = Now() + absl::ToInt64Nanoseconds(timeout);
  std::string last;
  while (Now() < deadline) {
    bool all_ok = true;
    for (const auto& node : nodes_) {
      if (!node->running()) continue;
      absl::StatusOr<internal::RedisReply> info =
          node->Command({"CLUSTER", "INFO"});
      if (!info.ok()) {
        last = info.status().ToString();
        all_ok = false;
        break;
      }
      if (info->str.find("cluster_state:ok") == std::string::npos ||
          info->str.find("cluster_slots_ok:16384") == std::string::npos ||
          info->str.find(fmt::format("cluster_known_nodes:{}", kNodes)) ==
              std::string::npos) {
        last = fmt::format("port {}: {}", node->port(), info->str);
        all_ok = false;
        break;
      }
      // Every master has its replica attached, and every replica's link
      // is up: WAIT (min_replicas_acked) counts only such replicas.
      absl::StatusOr<internal::RedisReply> role = node->Command({"ROLE"});
      const bool linked =
          role.ok() && role->elements.size() >= 3 &&
          ((role->elements[0].str == "master" &&
            !role->elements[2].elements.empty()) ||
           (role->elements[0].str == "slave" && role->elements.size() >= 4 &&
            role->elements[3].str == "connected"));
      if (!linked) {
        last = fmt::format("port {}: replication not linked yet", node->port());
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
