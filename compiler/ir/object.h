// Intrusive reference counting for immutable IR nodes.
#pragma once

#include <atomic>
#include <cstddef>
#include <utility>

namespace tessera {

/// Base of every ref-counted node. Nodes are immutable once built, so they can
/// be shared freely between threads (the count is atomic).
class Object {
 public:
  Object() = default;
  Object(const Object&) = delete;
  Object& operator=(const Object&) = delete;
  virtual ~Object() = default;

  void inc_ref() const { ref_count_.fetch_add(1, std::memory_order_relaxed); }
  void dec_ref() const {
    if (ref_count_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }

 private:
  mutable std::atomic<int> ref_count_{0};
};

/// A counted handle to a node of type T (which derives from Object).
template <typename T>
class Ref {
 public:
  Ref() = default;
  Ref(std::nullptr_t) {}  // NOLINT
  explicit Ref(T* ptr) : ptr_(ptr) {
    if (ptr_) ptr_->inc_ref();
  }
  Ref(const Ref& other) : ptr_(other.ptr_) {
    if (ptr_) ptr_->inc_ref();
  }
  Ref(Ref&& other) noexcept : ptr_(other.ptr_) { other.ptr_ = nullptr; }
  template <typename U>
  Ref(const Ref<U>& other) : ptr_(other.get()) {  // NOLINT: upcast
    if (ptr_) ptr_->inc_ref();
  }
  ~Ref() {
    if (ptr_) ptr_->dec_ref();
  }
  Ref& operator=(Ref other) noexcept {
    std::swap(ptr_, other.ptr_);
    return *this;
  }

  T* get() const { return ptr_; }
  T* operator->() const { return ptr_; }
  T& operator*() const { return *ptr_; }
  bool defined() const { return ptr_ != nullptr; }
  explicit operator bool() const { return ptr_ != nullptr; }
  bool same_as(const Ref& other) const { return ptr_ == other.ptr_; }
  bool operator==(const Ref& other) const { return ptr_ == other.ptr_; }
  bool operator!=(const Ref& other) const { return ptr_ != other.ptr_; }
  bool operator<(const Ref& other) const { return ptr_ < other.ptr_; }

 private:
  T* ptr_ = nullptr;
};

/// Builds a node and returns a handle to it.
template <typename T, typename... Args>
Ref<T> make_ref(Args&&... args) {
  return Ref<T>(new T(std::forward<Args>(args)...));
}

/// Hash of a handle by node identity (for unordered containers).
struct RefHash {
  template <typename T>
  size_t operator()(const Ref<T>& r) const {
    return std::hash<const void*>()(r.get());
  }
};

}  // namespace tessera
