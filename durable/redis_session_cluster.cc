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
  int64_t acked = 0;  // the WAIT after its last round, on `target`
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
                                      int64_t deadline_nanos, ReplicaAck* ack) {
  const bool wait = WantWait(ack);
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
            RunRound(commands, units, pending, replies, deadline_nanos, wait);
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
  if (wait) {
    // Each unit's last round ran it where it stayed: that node's WAIT.
    for (const Unit& u : units) ack->Add(u.acked, u.target);
  }
  return absl::OkStatus();
}

absl::Status RedisSession::RunRound(std::span<const RedisCommand> commands,
                                    std::vector<Unit>& units,
                                    const std::vector<size_t>& pending,
                                    std::vector<RedisReply>* replies,
                                    int64_t deadline_nanos, bool wait) {
  // One pipeline per node, in the order the units came, all sent before
  // any is read: the nodes work (and WAIT for their replicas) at once.
  struct Sent {
    std::string name;
    RedisConnection* conn;
    const std::vector<size_t>* members;
    size_t count;
  };
  std::map<std::string, std::vector<size_t>> by_node;
  for (const size_t i : pending) {
    by_node[units[i].target.ToString()].push_back(i);
  }
  std::vector<Sent> sent;
  // A failure drops the connections whose replies were not read.
  auto fail = [&](size_t from, const std::string& name, absl::Status s) {
    for (size_t k = from; k < sent.size(); ++k) nodes_.erase(sent[k].name);
    nodes_.erase(name);
    slots_ = SlotMap();  // the node may have failed over: read it again
    return Failed(std::move(s));
  };
  for (const auto& [name, members] : by_node) {
    const RedisEndpoint& node = units[members[0]].target;
    absl::StatusOr<RedisConnection*> conn =
        NodeConnection(node, deadline_nanos);
    if (!conn.ok()) return fail(0, name, conn.status());
    std::vector<RedisCommand> batch;
    for (const size_t i : members) {
      const Unit& u = units[i];
      if (u.asking) batch.push_back({"ASKING"});
      for (size_t k = u.first; k < u.first + u.count; ++k) {
        batch.push_back(commands[k]);
      }
    }
    // WAIT last: it covers every write this connection made, so all of
    // this node's units.
    if (wait) batch.push_back(WaitCommand());
    if (absl::Status s = (*conn)->Send(batch, deadline_nanos); !s.ok()) {
      return fail(0, name, std::move(s));
    }
    sent.push_back({name, *conn, &members, batch.size()});
  }
  std::vector<RedisReply> got;
  for (size_t n = 0; n < sent.size(); ++n) {
    const Sent& to = sent[n];
    if (absl::Status s = to.conn->Receive(to.count, &got, deadline_nanos);
        !s.ok()) {
      return fail(n, to.name, std::move(s));
    }
    size_t at = 0;
    for (const size_t i : *to.members) {
      const Unit& u = units[i];
      if (u.asking) ++at;  // ASKING's +OK
      for (size_t k = u.first; k < u.first + u.count; ++k) {
        (*replies)[k] = std::move(got[at++]);
      }
    }
    if (wait) {
      const int64_t acked = WaitCount(got[at]);
      for (const size_t i : *to.members) units[i].acked = acked;
    }
  }
  return absl::OkStatus();
}

}  // namespace tickwheel::durable::internal
