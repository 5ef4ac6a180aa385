// RedisSession's Redis Cluster half: the slot map, the connection per node,
// and the redirects (redis_session.h).

#include <algorithm>
#include <chrono>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "tickwheel/durable/redis_session.h"
#include "tickwheel/timer/clock.h"

namespace tickwheel::durable::internal {

// Commands that go to one node together: one command, or a MULTI ... EXEC
// block (whose keys share a slot, or the cluster refuses it).
struct RedisSession::Unit {
  size_t first = 0;
  size_t count = 1;
  std::optional<int> slot;
  RedisEndpoint target;
  bool pinned = false;  // target named by a redirect, not by the map
  bool asking = false;  // send ASKING first (after an ASK redirect)
  int redirects = 0;
};

absl::StatusOr<RedisConnection*> RedisSession::NodeConnection(
    const RedisEndpoint& node, int64_t deadline_nanos) {
  const std::string name = node.ToString();
  auto it = nodes_.find(name);
  if (it != nodes_.end() && it->second->ClosedByPeer()) {
    ever_failed_ = true;  // lost while idle: connecting again counts
  }
  if (it != nodes_.end() && !it->second->broken()) return it->second.get();
  if (it != nodes_.end()) nodes_.erase(it);
  absl::StatusOr<std::unique_ptr<RedisConnection>> conn = RedisConnection::Open(
      node, options_->username, options_->password, deadline_nanos);
  if (!conn.ok()) return conn.status();
  if (absl::Status s = LoadScripts(conn->get(), deadline_nanos); !s.ok()) {
    return s;
  }
  if (ever_failed_) {
    counters_->reconnects.fetch_add(1, std::memory_order_relaxed);
    ever_failed_ = false;
  }
  RedisConnection* raw = conn->get();
  nodes_[name] = *std::move(conn);
  return raw;
}

absl::Status RedisSession::RefreshSlots(int64_t deadline_nanos) {
  // Nodes this session already knows first (they are connected), then the
  // seeds: a seed that has left the cluster does not stop a refresh.
  std::vector<RedisEndpoint> candidates = slots_.masters();
  candidates.insert(candidates.end(), options_->cluster_seeds.begin(),
                    options_->cluster_seeds.end());
  absl::Status last = absl::UnavailableError("no seed node");
  for (const RedisEndpoint& node : candidates) {
    absl::StatusOr<RedisConnection*> conn =
        NodeConnection(node, deadline_nanos);
    if (!conn.ok()) {
      last = conn.status();
      nodes_.erase(node.ToString());
      continue;
    }
    const RedisCommand slots = {"CLUSTER", "SLOTS"};
    std::vector<RedisReply> replies;
    if (absl::Status s =
            (*conn)->Pipeline({&slots, 1}, &replies, deadline_nanos);
        !s.ok()) {
      last = s;
      nodes_.erase(node.ToString());
      continue;
    }
    if (replies[0].is_error()) {
      last = ReplyErrorStatus(replies[0], "CLUSTER SLOTS", node);
      continue;
    }
    absl::StatusOr<SlotMap> map = SlotMap::FromClusterSlots(replies[0], node);
    if (!map.ok()) {
      last = map.status();
      continue;
    }
    slots_ = *std::move(map);
    return absl::OkStatus();
  }
  counters_->errors.fetch_add(1, std::memory_order_relaxed);
  ever_failed_ = true;
  return absl::UnavailableError(fmt::format(
      "no node of the Redis Cluster (DurableTimerOptions::cluster_nodes) "
      "gave its slot map: {}",
      std::string(last.message())));
}

absl::Status RedisSession::RunCluster(std::span<const RedisCommand> commands,
                                      std::vector<RedisReply>* replies,
                                      int64_t deadline_nanos) {
  if (!connected()) {
    if (absl::Status s = RefreshSlots(deadline_nanos); !s.ok()) return s;
  }
  std::vector<Unit> units;
  for (size_t i = 0; i < commands.size();) {
    Unit u;
    u.first = i;
    if (commands[i][0] == "MULTI") {
      size_t end = i + 1;
      while (end < commands.size() && commands[end][0] != "EXEC") ++end;
      u.count = std::min(end, commands.size() - 1) - i + 1;
      for (size_t k = i + 1; k < i + u.count && !u.slot; ++k) {
        u.slot = CommandSlot(commands[k]);
      }
    } else {
      u.slot = CommandSlot(commands[i]);
    }
    i += u.count;
    units.push_back(std::move(u));
  }
  replies->assign(commands.size(), RedisReply());
  std::vector<size_t> pending(units.size());
  for (size_t i = 0; i < units.size(); ++i) pending[i] = i;
  while (!pending.empty()) {
    for (const size_t i : pending) {
      Unit& u = units[i];
      if (u.pinned) continue;
      const RedisEndpoint* master = slots_.Master(u.slot.value_or(0));
      if (master == nullptr) {
        slots_ = SlotMap();  // read it again next time
        return absl::UnavailableError(fmt::format(
            "no node of the Redis Cluster serves slot {} now; retry later",
            u.slot.value_or(0)));
      }
      u.target = *master;
    }
    if (absl::Status s =
            RunRound(commands, units, pending, replies, deadline_nanos);
        !s.ok()) {
      return s;
    }
    // What the round left to do again: redirected, or refused for a
    // missing script (NOSCRIPT: it did not run).
    std::vector<size_t> again;
    bool refresh = false;
    bool pause = false;
    for (const size_t i : pending) {
      Unit& u = units[i];
      u.asking = false;
      u.pinned = false;
      std::optional<Redirect> redirect;
      std::string redirect_text = "TRYAGAIN";
      bool tryagain = false;
      bool noscript = false;
      for (size_t k = u.first; k < u.first + u.count; ++k) {
        const RedisReply& r = (*replies)[k];
        if (!redirect) {
          redirect = ParseRedirect(r);
          if (redirect) redirect_text = r.str;
        }
        tryagain = tryagain || r.IsErrorCode("TRYAGAIN");
        noscript = noscript || r.IsErrorCode("NOSCRIPT");
      }
      if (!redirect && !tryagain && !noscript) continue;
      if (redirect || tryagain) {
        if (++u.redirects > options_->max_redirects) {
          counters_->errors.fetch_add(1, std::memory_order_relaxed);
          return absl::UnavailableError(fmt::format(
              "the Redis Cluster still redirects a command for slot {} "
              "after {} redirects (last: {} from {}); a resharding or "
              "failover may be under way: retry later",
              u.slot.value_or(0), options_->max_redirects, redirect_text,
              u.target.ToString()));
        }
      }
      if (redirect) {
        // The node that answered knows best: go where it says, and read
        // the map again after a MOVED for the commands that follow.
        u.target = redirect->to;
        u.pinned = true;
        u.asking = redirect->ask;
        refresh = refresh || !redirect->ask;
      } else if (tryagain) {
        pause = true;
      } else if (absl::StatusOr<RedisConnection*> conn =
                     NodeConnection(u.target, deadline_nanos);
                 !conn.ok() || !LoadScripts(*conn, deadline_nanos).ok()) {
        nodes_.erase(u.target.ToString());
        return Failed(absl::UnavailableError(fmt::format(
            "Redis at {} lost its scripts and could not load them again",
            u.target.ToString())));
      }
      again.push_back(i);
    }
    if (refresh) {
      if (absl::Status s = RefreshSlots(deadline_nanos); !s.ok()) return s;
    }
    if (pause) {
      // A slot in the middle of a migration: its keys are on both nodes
      // for a moment.
      const int64_t left = deadline_nanos - RealClock::MonotonicNanos();
      std::this_thread::sleep_for(std::chrono::nanoseconds(
          std::clamp<int64_t>(left / 4, 0, 10'000'000)));
    }
    pending = std::move(again);
  }
  return absl::OkStatus();
}

absl::Status RedisSession::RunRound(std::span<const RedisCommand> commands,
                                    std::vector<Unit>& units,
                                    const std::vector<size_t>& pending,
                                    std::vector<RedisReply>* replies,
                                    int64_t deadline_nanos) {
  // One pipeline per node, in the order the units came; all of them are
  // sent before any reply is read, so that the masters work on their parts
  // at once and a round costs one round trip, not one per master.
  struct NodeBatch {
    std::string name;
    std::vector<size_t> members;
    RedisConnection* conn = nullptr;
    size_t sent = 0;  // commands sent: the replies to read
  };
  std::vector<NodeBatch> batches;
  {
    std::map<std::string, std::vector<size_t>> by_node;
    for (const size_t i : pending) {
      by_node[units[i].target.ToString()].push_back(i);
    }
    for (auto& [name, members] : by_node) {
      batches.push_back({name, std::move(members)});
    }
  }
  // A failure leaves the replies of the nodes already sent to unread on
  // their connections: those are dropped too, as is the map (a node may
  // have failed over: it is read again).
  auto fail = [&](size_t from, size_t to, absl::Status s) {
    for (size_t k = from; k < to; ++k) nodes_.erase(batches[k].name);
    slots_ = SlotMap();
    return Failed(std::move(s));
  };
  for (size_t b = 0; b < batches.size(); ++b) {
    NodeBatch& nb = batches[b];
    absl::StatusOr<RedisConnection*> conn =
        NodeConnection(units[nb.members[0]].target, deadline_nanos);
    if (!conn.ok()) return fail(0, b, conn.status());
    std::vector<RedisCommand> batch;
    for (const size_t i : nb.members) {
      const Unit& u = units[i];
      if (u.asking) batch.push_back({"ASKING"});
      for (size_t k = u.first; k < u.first + u.count; ++k) {
        batch.push_back(commands[k]);
      }
    }
    nb.conn = *conn;
    nb.sent = batch.size();
    if (absl::Status s = nb.conn->Send(batch, deadline_nanos); !s.ok()) {
      return fail(0, b + 1, std::move(s));
    }
  }
  for (size_t b = 0; b < batches.size(); ++b) {
    const NodeBatch& nb = batches[b];
    std::vector<RedisReply> got;
    if (absl::Status s = nb.conn->Receive(nb.sent, &got, deadline_nanos);
        !s.ok()) {
      return fail(b, batches.size(), std::move(s));
    }
    size_t at = 0;
    for (const size_t i : nb.members) {
      const Unit& u = units[i];
      if (u.asking) ++at;  // ASKING's +OK
      for (size_t k = u.first; k < u.first + u.count; ++k) {
        (*replies)[k] = std::move(got[at++]);
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace tickwheel::durable::internal
