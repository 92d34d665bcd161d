#include "kernels/parallel.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

namespace mhaviz::detail {
namespace {

thread_local bool in_loop = false;  // a nested loop runs inline: the workers are taken
thread_local bool serial = false;   // set_thread_serial: this thread's loops run inline

// Returns once a != old: spins for up to `budget`, then sleeps in atomic::wait. A futex
// wake-up costs tens of µs on this kind of virtual machine, as much as a whole stage of
// a T = 128 forward, and a forward's stages come back to back. Budgets stay short: in
// the app, longer spins (300 µs, 2 ms) took cores from llvmpipe and slowed frames by 20%.
template <class V>
void await_change(const std::atomic<V>& a, V old, std::chrono::microseconds budget) {
  const auto until = std::chrono::steady_clock::now() + budget;
  for (unsigned i = 1;; ++i) {
    if (a.load(std::memory_order_acquire) != old) return;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
    if (i % 256 == 0 && std::chrono::steady_clock::now() > until) break;
  }
  a.wait(old, std::memory_order_acquire);
}

// Workers started once and parked on a futex between loops: starting threads per loop
// cost about a tenth of a T = 128 forward (clone, stack faults, a fresh malloc arena).
class Pool {
 public:
  explicit Pool(int workers) {
    threads_.reserve(static_cast<std::size_t>(workers));
    for (int i = 0; i < workers; ++i) threads_.emplace_back([this, i] { work(i + 1); });
  }
  int size() const { return static_cast<int>(threads_.size()) + 1; }
  std::mutex busy;  // one loop at a time; a caller that finds it taken runs inline

  // Runs fn over [0, n) on `parts` threads: unless shared, chunk 0 on the caller and chunk i
  // on worker i; if shared, chunks taken from a cursor by whichever thread is free.
  void run(std::int64_t n, int parts, bool shared, const std::function<void(std::int64_t, std::int64_t)>& fn) {
    fn_ = &fn;
    n_ = n;
    parts_ = parts;
    chunk_ = (n + parts - 1) / parts;
    shared_ = shared;
    next_.store(0, std::memory_order_relaxed);
    remaining_.store(static_cast<int>(threads_.size()), std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);
    generation_.notify_all();
    if (shared)
      take_chunks();
    else
      fn(0, std::min(n, chunk_));
    for (int left = remaining_.load(std::memory_order_acquire); left != 0;
         left = remaining_.load(std::memory_order_acquire))
      await_change(remaining_, left, std::chrono::microseconds(50));
  }

 private:
  void work(int index) {
    std::uint64_t seen = 0;
    for (;;) {
      // Spin briefly after a loop: the next stage of the same forward is likely to follow.
      await_change(generation_, seen, std::chrono::microseconds(50));
      seen = generation_.load(std::memory_order_acquire);
      const std::int64_t b = index * chunk_, e = std::min(n_, b + chunk_);
      in_loop = true;
      if (index < parts_ && shared_)
        take_chunks();
      else if (index < parts_ && b < e)
        (*fn_)(b, e);
      in_loop = false;
      if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1) remaining_.notify_one();
    }
  }

  // Each take is half the items left over the threads (guided scheduling): a product's first
  // calls are long (its per-call set-up, such as copying rows of A, paid rarely) and its last
  // ones short, so that the threads end together even when one of them ran slower.
  void take_chunks() {
    for (;;) {
      std::int64_t b = next_.load(std::memory_order_relaxed), size = 0;
      do {
        if (b >= n_) return;
        size = std::max<std::int64_t>(1, (n_ - b) / (2 * parts_));
      } while (!next_.compare_exchange_weak(b, b + size, std::memory_order_relaxed));
      (*fn_)(b, b + size);
    }
  }

  std::vector<std::thread> threads_;
  std::atomic<std::uint64_t> generation_{0};
  std::atomic<int> remaining_{0};
  std::atomic<std::int64_t> next_{0};
  const std::function<void(std::int64_t, std::int64_t)>* fn_ = nullptr;
  std::int64_t n_ = 0, chunk_ = 0;
  int parts_ = 0;
  bool shared_ = false;
};

Pool& pool() {
  // Never destroyed: a worker parked in its wait when the process exits is harmless,
  // while joining from a static destructor could deadlock with a loop still running.
  static Pool* p = new Pool(static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 16u)) - 1);
  return *p;
}

void run_loop(std::int64_t n, std::int64_t work_per_item, bool shared,
              const std::function<void(std::int64_t, std::int64_t)>& fn) {
  constexpr std::int64_t kMinWorkPerThread = 1 << 15;  // ~25 µs of element work: a wake-up is a few µs
  const std::int64_t want = std::min(n, std::max<std::int64_t>(1, n * work_per_item / kMinWorkPerThread));
  if (want <= 1) {
    if (n > 0) fn(0, n);
    return;
  }
  Pool& p = pool();
  std::unique_lock<std::mutex> lock(p.busy, std::defer_lock);
  if (in_loop || serial || p.size() <= 1 || !lock.try_lock()) {
    fn(0, n);
    return;
  }
  in_loop = true;
  p.run(n, static_cast<int>(std::min<std::int64_t>(want, p.size())), shared, fn);
  in_loop = false;
}

}  // namespace

void parallel_for(std::int64_t n, std::int64_t work_per_item,
                  const std::function<void(std::int64_t, std::int64_t)>& fn) {
  run_loop(n, work_per_item, false, fn);
}

void parallel_for_shared(std::int64_t n, std::int64_t work_per_item,
                         const std::function<void(std::int64_t, std::int64_t)>& fn) {
  run_loop(n, work_per_item, true, fn);
}

int parallel_threads() { return pool().size(); }

bool loops_run_inline() { return in_loop || serial; }

}  // namespace mhaviz::detail

namespace mhaviz {
void set_thread_serial(bool on) { detail::serial = on; }
}  // namespace mhaviz
