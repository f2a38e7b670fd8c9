// ncclCommGrow: a communicator of a parent's ranks, keeping their numbers, and ranks that join.
//
// The grown communicator is a new one, made by the ordinary rendezvous on the id from
// ncclCommGetUniqueId (its root listens in the process of the rank that made it). The parent's
// ranks first agree, over the parent's bootstrap, on that id and on the new size: every rank sees
// the same gathered entries, so every rank takes the same decision, including the same refusal.
#include <cstring>
#include <string>
#include <vector>

#include "bootstrap/unique_id.h"
#include "comm/comm.h"
#include "comm/comm_error.h"
#include "lifecycle/comm_lifecycle.h"

namespace weft {

ncclResult_t commGrowId(ncclComm* parent, ncclUniqueId* id) {
  if (parent->growIdPending)
    return setError(parent, ncclInvalidUsage,
                    "ncclCommGetUniqueId: the id made earlier on this communicator has not been used by "
                    "ncclCommGrow yet; each communicator has at most one pending grow id");
  ncclResult_t r = bootstrapGetLocalUniqueId(id);
  if (r != ncclSuccess) return setError(parent, r, "ncclCommGetUniqueId: could not create the id");
  parent->growId = *id;
  parent->growIdPending = true;
  return ncclSuccess;
}

namespace {

// What each of the parent's ranks brings to the grow.
struct GrowEntry {
  int32_t nranks;
  int32_t hasId;   // this rank passed an id (the root)
  int32_t idOurs;  // that id is this communicator's pending one
  int32_t pad;
  ncclUniqueId id;
};

ncclResult_t agreeOnGrow(ncclComm* parent, int nranks, const ncclUniqueId* id, ncclUniqueId* agreedId) {
  std::vector<GrowEntry> all(static_cast<size_t>(parent->nranks));
  GrowEntry& mine = all[static_cast<size_t>(parent->rank)];
  memset(&mine, 0, sizeof mine);
  mine.nranks = nranks;
  mine.hasId = id != nullptr;
  mine.idOurs = id != nullptr && parent->growIdPending && memcmp(id, &parent->growId, sizeof *id) == 0;
  if (id != nullptr) mine.id = *id;
  std::string why;
  ncclResult_t r = parent->bootstrap->allGather(all.data(), sizeof(GrowEntry), &why);
  if (r != ncclSuccess) return setError(parent, r, "ncclCommGrow: exchanging the grow request failed: %s", why.c_str());
  int root = -1;
  for (int i = 0; i < parent->nranks; ++i) {
    const GrowEntry& e = all[static_cast<size_t>(i)];
    if (e.nranks != all[0].nranks)
      return setError(parent, ncclInvalidArgument, "ncclCommGrow: rank 0 asked for %d ranks but rank %d for %d",
                      all[0].nranks, i, e.nranks);
    if (!e.hasId) continue;
    if (root >= 0)
      return setError(parent, ncclInvalidArgument,
                      "ncclCommGrow: ranks %d and %d both passed an id; only the rank that called "
                      "ncclCommGetUniqueId passes it, the others pass NULL",
                      root, i);
    root = i;
  }
  if (root < 0)
    return setError(parent, ncclInvalidArgument,
                    "ncclCommGrow: no rank of the communicator passed the id from ncclCommGetUniqueId");
  if (!all[static_cast<size_t>(root)].idOurs)
    return setError(parent, ncclInvalidArgument,
                    "ncclCommGrow: rank %d passed an id that ncclCommGetUniqueId did not make on this "
                    "communicator, or that an earlier grow already used",
                    root);
  *agreedId = all[static_cast<size_t>(root)].id;
  return ncclSuccess;
}

}  // namespace

ncclResult_t commGrow(ncclComm* parent, int nranks, const ncclUniqueId* id, int rank, ncclComm** out,
                      const CommConfig& cfg) {
  if (parent == nullptr) return commCreate(out, nranks, *id, rank, cfg);  // a joining rank
  ncclUniqueId agreed;
  ncclResult_t r = agreeOnGrow(parent, nranks, id, &agreed);
  if (r != ncclSuccess) return r;
  parent->growIdPending = false;  // used up, on the root, whether the rendezvous succeeds or not
  CommConfig blockingCfg = cfg;
  blockingCfg.blocking = 1;  // the parent's ranks already synchronised; finish it here, as a split does
  r = commCreate(out, nranks, agreed, parent->rank, blockingCfg);
  if (*out != nullptr) (*out)->config.blocking = cfg.blocking;
  return r;
}

}  // namespace weft
