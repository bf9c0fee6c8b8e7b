#include "common/parallel.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

namespace mariposa {
namespace {

// One batch: its tasks are taken by index; `left` counts those not finished.
struct Batch {
  std::vector<std::function<void()>>* tasks;
  size_t size;
  std::atomic<size_t> next{0};
  std::mutex mu;
  std::condition_variable all_done;
  size_t left;
  // Runs tasks until none is left to take. A helper that comes after the
  // last was taken touches nothing of the caller's (it reads `size`, kept
  // here).
  void Work() {
    for (size_t k; (k = next++) < size;) {
      (*tasks)[k]();
      std::lock_guard<std::mutex> l(mu);
      if (--left == 0) all_done.notify_all();
    }
  }
};

class Pool {
 public:
  // Asks `helpers` kept threads to join `batch`, starting threads up to
  // kMaxParallelThreads when fewer are idle.
  void Help(const std::shared_ptr<Batch>& batch, int helpers) {
    std::lock_guard<std::mutex> l(mu_);
    // Entries of batches whose tasks were all taken (their callers did them)
    // would only wake a thread for nothing.
    queue_.erase(std::remove_if(queue_.begin(), queue_.end(),
                                [](const std::shared_ptr<Batch>& b) { return b->next.load() >= b->size; }),
                 queue_.end());
    for (int h = 0; h < helpers; ++h) queue_.push_back(batch);
    // A thread for every entry waiting (those of other batches too).
    int missing = std::min(static_cast<int>(queue_.size()) - idle_,
                           kMaxParallelThreads - static_cast<int>(threads_.size()));
    for (int t = 0; t < missing; ++t) threads_.emplace_back([this] { Loop(); });
    cv_.notify_all();
  }
  int threads() {
    std::lock_guard<std::mutex> l(mu_);
    return static_cast<int>(threads_.size());
  }

 private:
  [[noreturn]] void Loop() {
    std::unique_lock<std::mutex> l(mu_);
    while (true) {
      ++idle_;
      cv_.wait(l, [this] { return !queue_.empty(); });
      --idle_;
      std::shared_ptr<Batch> b = std::move(queue_.front());
      queue_.pop_front();
      l.unlock();
      b->Work();
      b.reset();
      l.lock();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Batch>> queue_;
  std::vector<std::thread> threads_;  // never joined: they live as long as the process
  int idle_ = 0;
};

Pool& ThePool() {
  static Pool* pool = new Pool();  // never destroyed: its threads outlive static destruction
  return *pool;
}

}  // namespace

void RunParallel(std::vector<std::function<void()>>* tasks, int parallel) {
  if (tasks->empty()) return;
  int threads = std::min<int>(std::max(1, parallel), static_cast<int>(tasks->size()));
  if (threads == 1) {
    for (auto& t : *tasks) t();
    return;
  }
  auto batch = std::make_shared<Batch>();
  batch->tasks = tasks;
  batch->size = tasks->size();
  batch->left = tasks->size();
  ThePool().Help(batch, threads - 1);
  batch->Work();
  std::unique_lock<std::mutex> l(batch->mu);
  batch->all_done.wait(l, [&] { return batch->left == 0; });
}

int ParallelThreads() { return ThePool().threads(); }

}  // namespace mariposa
