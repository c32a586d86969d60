// DirectoryCheckpointStore's file layout and both read-backs (Read into the state's memory,
// Verify through recycled buffers), against content and files the tests make themselves.
#include "storage/checkpoint_store.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace stallscope {
namespace {

namespace fs = std::filesystem;

class CheckpointStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("stallscope-ckstore-test-" + std::to_string(getpid()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // `bytes` of seeded random content in a 4096-aligned buffer with room to 4096.
  struct Buffer {
    std::unique_ptr<std::byte[], decltype(&std::free)> data{nullptr, &std::free};
    size_t bytes = 0;
    std::span<std::byte> span() { return {data.get(), bytes}; }
  };
  static Buffer Content(size_t bytes, uint32_t seed) {
    Buffer b;
    b.bytes = bytes;
    const size_t room = (bytes + 4095) / 4096 * 4096 + 4096;
    b.data.reset(static_cast<std::byte*>(std::aligned_alloc(4096, room)));
    std::memset(b.data.get(), 0, room);
    std::mt19937 rng(seed);
    for (size_t i = 0; i < bytes; ++i) b.data[i] = static_cast<std::byte>(rng());
    return b;
  }
  static std::vector<char> FileBytes(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
  }
  static void Flip(const std::string& path, uint64_t offset) {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(offset));
    const char c = static_cast<char>(f.get());
    f.seekp(static_cast<std::streamoff>(offset));
    f.put(static_cast<char>(c ^ 0x5a));
  }
  fs::path dir_;
};

// The body starts the file, byte for byte, then one 4096-byte header at the next 4096
// boundary; both read-backs give the body back, whatever the block and the body's size.
TEST_F(CheckpointStoreTest, TheBodyStartsTheFileAndBothReadBacksReturnIt) {
  fs::create_directories(dir_);
  const int probe = open((dir_ / "probe").c_str(), O_CREAT | O_WRONLY | O_DIRECT, 0644);
  const bool direct_works = probe >= 0;  // tmpfs refuses O_DIRECT
  if (probe >= 0) close(probe);
  for (const bool direct : {false, true}) {
    if (direct && !direct_works) continue;
    for (const size_t bytes : {size_t{1}, size_t{4096}, size_t{300000}, size_t{3 << 20}}) {
      SCOPED_TRACE(testing::Message() << bytes << (direct ? " O_DIRECT" : ""));
      DirectoryCheckpointStore store(
          {.path = dir_.string(), .direct = direct, .block = 64 << 10, .depth = 3});
      Buffer b = Content(bytes, static_cast<uint32_t>(bytes));
      store.Write(7, b.span());
      const std::vector<char> file = FileBytes(store.NameOf(7));
      ASSERT_EQ(file.size(), (bytes + 4095) / 4096 * 4096 + 4096);
      EXPECT_EQ(std::memcmp(file.data(), b.data.get(), bytes), 0);
      EXPECT_EQ(std::memcmp(file.data() + file.size() - 4096, "STLSCKPT", 8), 0);

      Buffer back = Content(bytes, 99);
      store.Read(7, back.span());
      EXPECT_EQ(std::memcmp(back.data.get(), b.data.get(), bytes), 0);
      EXPECT_NO_THROW(store.Verify(7, bytes));
    }
  }
}

// One changed byte anywhere in the body, first block to last: both read-backs refuse it.
TEST_F(CheckpointStoreTest, AChangedByteAnywhereInTheBodyFailsBothReadBacks) {
  const size_t bytes = 1 << 20;
  DirectoryCheckpointStore store({.path = dir_.string(), .block = 256 << 10, .depth = 2});
  Buffer b = Content(bytes, 5);
  for (const uint64_t at : {uint64_t{0}, uint64_t{300001}, uint64_t{bytes - 1}}) {
    SCOPED_TRACE(at);
    store.Write(1, b.span());
    Flip(store.NameOf(1), at);
    try {
      store.Verify(1, bytes);
      ADD_FAILURE() << "Verify accepted a changed byte";
    } catch (const CheckpointError& e) {
      EXPECT_NE(std::string(e.what()).find("does not match its checksum"), std::string::npos);
    }
    Buffer back = Content(bytes, 6);
    EXPECT_THROW(store.Read(1, back.span()), CheckpointError);
  }
}

// A file cut short, a body of another size, and a file of the older layout (header first)
// are each refused with a message naming the file; none is taken for a checkpoint.
TEST_F(CheckpointStoreTest, ShortForeignAndOlderFilesAreRefusedByName) {
  const size_t bytes = 200000;
  DirectoryCheckpointStore store({.path = dir_.string(), .block = 64 << 10, .depth = 4});
  Buffer b = Content(bytes, 8);
  store.Write(3, b.span());
  const std::string name = store.NameOf(3);
  auto message = [&](auto&& read) {
    try {
      read();
    } catch (const CheckpointError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message([&] { store.Verify(3, bytes + 4096); }).find("holds"), std::string::npos);

  fs::resize_file(name, fs::file_size(name) - 4096);  // the header gone
  EXPECT_NE(message([&] { store.Verify(3, bytes); }).find(name), std::string::npos);

  // Version 1: the header's magic at offset 0, the body after it.
  std::vector<char> old(4096 + bytes, 0);
  std::memcpy(old.data(), "STLSCKPT", 8);
  std::ofstream(name, std::ios::binary | std::ios::trunc).write(old.data(), old.size());
  const std::string older = message([&] { store.Verify(3, bytes); });
  EXPECT_NE(older.find("older stallscope"), std::string::npos) << older;
  EXPECT_NE(older.find(name), std::string::npos) << older;
}

}  // namespace
}  // namespace stallscope
