/*
 * check_guard.h: the check programs' sources that end against a page that faults on any access,
 * so that a read past them crashes the program (and the test that runs it) rather than passing.
 */
#ifndef STOKE_CHECK_GUARD_H
#define STOKE_CHECK_GUARD_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

/* `bytes` bytes that end against a page that faults on any access (the mapping is never freed). */
static uint8_t *against_guard(size_t bytes)
{
  const size_t page = (size_t)sysconf(_SC_PAGESIZE), span = (bytes + page - 1) / page * page;
  uint8_t *base = mmap(NULL, span + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

  if (base == MAP_FAILED || mprotect(base + span, page, PROT_NONE) != 0) {
    perror("mmap");
    exit(2);
  }
  return base + span - bytes;
}

#endif
