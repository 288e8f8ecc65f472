/*
 * entry_filing.c: what filing a restart cache's entry costs in system calls alone, one thread, the
 * process's CPU time an entry (user and system, getrusage), into 256 subfolders as the cache lays
 * them out, 2,000 entries of 46,000 bytes (a 0.2 MP photograph's copy):
 *
 *   mode 0  EntryWriter's sequence: open(.NAME.PID.RANDOM.tmp, O_WRONLY|O_CREAT|O_EXCL|O_NOFOLLOW),
 *           write, close, lstat(entry) (absent), rename(tmp, entry)
 *   mode 1  what was tried instead: open(folder, O_TMPFILE), write, linkat(/proc/self/fd/N, entry),
 *           close (no temporary name, no rename)
 *   mode 2  nothing: the pacing's own CPU, to take from the others'
 *
 * PACE_US sleeps that long before each entry, as a loader files its copies between decodes: the
 * kernel's paths are then cold at each entry. It is a measurement, not part of Stoke.
 *
 *   gcc -O2 -o /tmp/entry_filing benchmarks/native/entry_filing.c
 *   /tmp/entry_filing EMPTY_FOLDER MODE [PACE_US]
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#define ENTRIES 2000
#define ENTRY_BYTES 46000

static double cpu_seconds(void)
{
  struct rusage r;
  getrusage(RUSAGE_SELF, &r);
  return r.ru_utime.tv_sec + r.ru_utime.tv_usec * 1e-6 + r.ru_stime.tv_sec + r.ru_stime.tv_usec * 1e-6;
}

int main(int argc, char **argv)
{
  if (argc < 3) {
    fprintf(stderr, "usage: %s EMPTY_FOLDER MODE [PACE_US]\n", argv[0]);
    return 2;
  }
  const char *base = argv[1];
  int mode = atoi(argv[2]);
  int pace = argc > 3 ? atoi(argv[3]) : 0;
  static char bytes[ENTRY_BYTES];
  memset(bytes, 7, sizeof(bytes));
  char entry[4096], temporary[4096], folder[3800], fdpath[64];
  for (int d = 0; d < 256; d++) {
    snprintf(folder, sizeof(folder), "%s/%02x", base, d);
    mkdir(folder, 0700);
  }
  double start = cpu_seconds();
  for (unsigned i = 0; i < ENTRIES; i++) {
    if (pace > 0) usleep((useconds_t)pace);
    if (mode == 2) continue;
    unsigned key = i * 2654435761u;
    snprintf(folder, sizeof(folder), "%s/%02x", base, key >> 24);
    snprintf(entry, sizeof(entry), "%s/%08x%08x.stc", folder, key, i);
    int fd;
    if (mode == 0) {
      snprintf(temporary, sizeof(temporary), "%s/.%08x%08x.stc.%d.%08x.tmp", folder, key, i, (int)getpid(), rand());
      fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    } else {
      fd = open(folder, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
    }
    if (fd < 0 || write(fd, bytes, sizeof(bytes)) != (ssize_t)sizeof(bytes)) {
      perror("create or write");
      return 1;
    }
    if (mode == 0) {
      struct stat st;
      if (close(fd) != 0 || lstat(entry, &st) == 0 || rename(temporary, entry) != 0) {
        perror("close, lstat or rename");
        return 1;
      }
    } else {
      snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", fd);
      if (linkat(AT_FDCWD, fdpath, AT_FDCWD, entry, AT_SYMLINK_FOLLOW) != 0 || close(fd) != 0) {
        perror("linkat or close");
        return 1;
      }
    }
  }
  printf("mode %d, pace %d us: %.1f us of CPU an entry\n", mode, pace, (cpu_seconds() - start) / ENTRIES * 1e6);
  return 0;
}
