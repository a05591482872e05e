// Several real processes writing one database, and a writer killed with
// SIGKILL in the middle of a batch.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <thread>

#include "records/sqlite.h"
#include "records/store.h"
#include "test_util.h"

namespace tessera::records {
namespace {

using testing::key_of;
using testing::kTarget;
using testing::ok_record;
using testing::TempDir;

std::vector<Record> tagged_batch(const std::string& tag, int size, int first) {
  std::vector<Record> batch;
  for (int i = 0; i < size; ++i) {
    Record r = ok_record(key_of((first + i) % 97), kTarget, 1e-4 * (1 + (first + i) % 13), first + i);
    r.device_key = tag;
    batch.push_back(std::move(r));
  }
  return batch;
}

// Records per device key: the tag each writer (or each batch) put there.
std::map<std::string, int64_t> count_by_tag(Store& store) {
  std::map<std::string, int64_t> counts;
  Status st = store.for_each({}, [&](const Record& r) {
    ++counts[r.device_key];
    return Status::ok();
  });
  EXPECT_TRUE(st) << st.to_string();
  return counts;
}

TEST(StoreConcurrency, FourProcessesAppendTwentyThousandRecordsAndLoseNone) {
  TempDir dir;
  const std::string path = dir.file("shared.db");
  constexpr int kWriters = 4, kPerWriter = 5000, kBatch = 100;
  int gate[2];
  ASSERT_EQ(::pipe(gate), 0);
  std::vector<pid_t> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.push_back(testing::spawn([&, w] {
      ::close(gate[1]);
      char c;
      (void)::read(gate[0], &c, 1);  // returns at EOF: every writer starts at once
      // Every writer opens (and races to create) the database itself.
      auto store = Store::open(path);
      if (!store) {
        std::fprintf(stderr, "writer %d: %s\n", w, store.status().to_string().c_str());
        return 1;
      }
      for (int i = 0; i < kPerWriter; i += kBatch) {
        Status st = store->append(tagged_batch("writer-" + std::to_string(w), kBatch, w * kPerWriter + i));
        if (!st) {
          std::fprintf(stderr, "writer %d: %s\n", w, st.to_string().c_str());
          return 2;
        }
      }
      return 0;
    }));
  }
  ::close(gate[0]);
  ::close(gate[1]);
  for (pid_t pid : writers) EXPECT_EQ(testing::wait_for(pid), 0);
  ASSERT_OK_AND_ASSIGN(Store store, Store::open(path));
  EXPECT_EQ(store.count().value(), kWriters * kPerWriter);
  auto counts = count_by_tag(store);
  ASSERT_EQ(counts.size(), static_cast<size_t>(kWriters));
  for (const auto& [tag, n] : counts) EXPECT_EQ(n, kPerWriter) << tag;
}

// One writer appending tagged batches until it is killed; the pipe tells the
// parent when each batch begins and when it has committed.
struct BatchEvent {
  int32_t batch;
  int32_t committed;  // 0: the append starts; 1: it returned ok
};

TEST(StoreConcurrency, KillDuringABatchKeepsEveryCommittedBatchAndNoPartOfAnother) {
  TempDir dir;
  const std::string path = dir.file("killed.db");
  constexpr int kBatch = 4000;
  bool killed_mid_batch = false;
  // A kill can land between batches by chance; a few rounds make a kill in the
  // middle of one certain in practice, and every round checks the invariant.
  for (int round = 0; round < 5 && !killed_mid_batch; ++round) {
    int events[2];
    ASSERT_EQ(::pipe(events), 0);
    std::string prefix = "r";
    prefix += std::to_string(round);
    prefix += "-b";
    pid_t writer = testing::spawn([&] {
      ::close(events[0]);
      auto store = Store::open(path);
      if (!store) return 1;
      for (int32_t b = 0;; ++b) {
        BatchEvent begin{b, 0};
        if (::write(events[1], &begin, sizeof begin) != sizeof begin) return 2;
        if (!store->append(tagged_batch(prefix + std::to_string(b), kBatch, b * kBatch))) return 3;
        BatchEvent done{b, 1};
        if (::write(events[1], &done, sizeof done) != sizeof done) return 2;
      }
    });
    ::close(events[1]);
    // Learn how long a batch takes, then kill half-way through a later one.
    BatchEvent e{};
    auto started = std::chrono::steady_clock::now();
    std::chrono::steady_clock::duration batch_time{};
    int last_begun = -1, last_done = -1;
    while (::read(events[0], &e, sizeof e) == sizeof e) {
      if (e.committed) {
        last_done = e.batch;
        batch_time = std::chrono::steady_clock::now() - started;
        continue;
      }
      last_begun = e.batch;
      started = std::chrono::steady_clock::now();
      if (e.batch == 3) break;
    }
    std::this_thread::sleep_for(batch_time / 2);
    ASSERT_EQ(::kill(writer, SIGKILL), 0);
    EXPECT_EQ(testing::wait_for(writer), 128 + SIGKILL);
    while (::read(events[0], &e, sizeof e) == sizeof e) {
      if (e.committed)
        last_done = e.batch;
      else
        last_begun = e.batch;
    }
    ::close(events[0]);

    ASSERT_OK_AND_ASSIGN(Store store, Store::open(path));
    ASSERT_OK_AND_ASSIGN(auto conn, sql::Connection::open(path, SQLITE_OPEN_READONLY, 1000, {}));
    EXPECT_EQ(conn.query_text("PRAGMA integrity_check").value(), "ok");
    int highest = -1;
    for (const auto& [tag, n] : count_by_tag(store)) {
      if (tag.rfind(prefix, 0) != 0) continue;
      EXPECT_EQ(n, kBatch) << "batch " << tag << " is partly stored";
      highest = std::max(highest, std::stoi(tag.substr(prefix.size())));
      EXPECT_LE(std::stoi(tag.substr(prefix.size())), last_begun);
    }
    // Every batch the writer saw commit is there, and at most the one in flight besides.
    EXPECT_GE(highest, last_done);
    EXPECT_LE(highest, last_done + 1);
    int64_t in_round = 0;
    for (const auto& [tag, n] : count_by_tag(store))
      if (tag.rfind(prefix, 0) == 0) in_round += n;
    EXPECT_EQ(in_round, static_cast<int64_t>(highest + 1) * kBatch);
    killed_mid_batch = highest == last_done && last_begun == last_done + 1;
  }
  EXPECT_TRUE(killed_mid_batch) << "no kill landed inside a batch";
}

}  // namespace
}  // namespace tessera::records
