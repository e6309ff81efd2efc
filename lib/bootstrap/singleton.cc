// A process started without a launcher: one PE, nothing to exchange.
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <string>

#include "lib/base/error.h"
#include "lib/bootstrap/bootstrap_impl.h"

namespace hoshmem {
namespace {
class SingletonBootstrap final : public Bootstrap {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  const std::vector<int> &local_ranks() const override { return local_; }
  const char *launcher() const override { return "singleton (no launcher)"; }
  void begin_session() override { values_.clear(); }
  void put(const char *key, const void *data, size_t len) override {
    auto p = static_cast<const uint8_t *>(data);
    values_[key].assign(p, p + len);
  }
  void exchange() override {}
  std::vector<uint8_t> get(int rank, const char *key) override {
    auto it = values_.find(key);
    if (rank != 0 || it == values_.end())
      fatal("shmem_init", "bootstrap: no value '%s' for PE %d", key, rank);
    return it->second;
  }
  void barrier() override {}
  [[noreturn]] void abort(int status, const char *) override {
    fflush(nullptr);
    _exit(status);
  }
  void finalize() override {}

 private:
  std::vector<int> local_{0};
  std::map<std::string, std::vector<uint8_t>> values_;
};
}  // namespace

std::unique_ptr<Bootstrap> make_singleton_bootstrap() {
  return std::make_unique<SingletonBootstrap>();
}

}  // namespace hoshmem
