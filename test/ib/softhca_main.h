// main() of the test/ib binaries: they link Debian's libibverbs/libmlx5 and run themselves again
// with the software HCA of test/softhca selected (LD_LIBRARY_PATH), in a fabric of their own
// (named from /dev/urandom: test sandboxes share /dev/shm). Options before the GoogleTest ones:
//   --endian=host|big   the model's 8-byte atomic reply mode (default big, real hardware's reset
//                       value)
//   --devices=N --ports=N   how many devices and ports per device the model presents
//   --no-masked-atomics     a device without mlx5 extended atomics
//   --env=NAME=VALUE        any other variable (softhca knobs, HOSHMEM_RC_VERBS)
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

inline int softhca_test_main(int argc, char **argv, const char *name) {
  if (!getenv("HOSHMEM_TEST_SOFTHCA")) {
    char self[4096];
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return 1;
    self[n] = '\0';
    const char *srcdir = getenv("TEST_SRCDIR");
    const std::string libs = srcdir ? std::string(srcdir) + "/hoshmem/test/softhca/softlib"
                                    : std::string(self) + ".runfiles/hoshmem/test/softhca/softlib";
    setenv("LD_LIBRARY_PATH", libs.c_str(), 1);
    setenv("HOSHMEM_TEST_SOFTHCA", "1", 1);
    setenv("SOFTHCA_ATOMIC_ENDIAN", "big", 1);
    for (int i = 1; i < argc; ++i) {
      if (!strncmp(argv[i], "--endian=", 9)) setenv("SOFTHCA_ATOMIC_ENDIAN", argv[i] + 9, 1);
      if (!strncmp(argv[i], "--devices=", 10)) setenv("SOFTHCA_NUM_DEVICES", argv[i] + 10, 1);
      if (!strncmp(argv[i], "--ports=", 8)) setenv("SOFTHCA_NUM_PORTS", argv[i] + 8, 1);
      if (!strcmp(argv[i], "--no-masked-atomics")) setenv("SOFTHCA_MASKED_ATOMICS", "0", 1);
      if (!strncmp(argv[i], "--env=", 6)) putenv(argv[i] + 6);  // argv outlives the exec
    }
    unsigned long long r = 0;
    if (FILE *f = fopen("/dev/urandom", "r")) {
      if (fread(&r, sizeof r, 1, f) != 1) r = 0;
      fclose(f);
    }
    char fabric[96];
    snprintf(fabric, sizeof fabric, "%s-%llx", name, r);
    setenv("SOFTHCA_FABRIC", fabric, 1);
    // Run as a child, then remove the fabric's segment: processes the tests kill on purpose
    // (a peer that "dies") cannot.
    const pid_t child = fork();
    if (child == 0) {
      execv(self, argv);
      perror("execv");
      _exit(1);
    }
    int status = 0;
    if (child < 0 || waitpid(child, &status, 0) < 0) return 1;
    const std::string segment = std::string("/dev/shm/softhca.") + fabric;
    unlink(segment.c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
