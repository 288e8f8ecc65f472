/*
 * read_whole.h: the measurement programs' input, a file read whole. Each reads a list of paths on
 * stdin (or a file) and keeps the files' bytes in memory, so that the timed loops read no disk.
 */
#ifndef STOKE_BENCH_READ_WHOLE_H
#define STOKE_BENCH_READ_WHOLE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * The next path of `list` without its newline, in path[0, bytes); 0 at the list's end.
 */
static int next_path(FILE *list, char *path, size_t bytes)
{
  if (fgets(path, (int)bytes, list) == NULL) return 0;
  path[strcspn(path, "\n")] = '\0';
  return 1;
}

/* The bytes of the file at `path`, malloc'd, their count in *size; NULL where it cannot be read whole. */
static uint8_t *read_whole(const char *path, long *size)
{
  FILE *in = fopen(path, "rb");
  if (in == NULL) return NULL;
  uint8_t *data = NULL;
  if (fseek(in, 0, SEEK_END) == 0 && (*size = ftell(in)) > 0 && fseek(in, 0, SEEK_SET) == 0) {
    data = malloc((size_t)*size);
    if (data != NULL && fread(data, 1, (size_t)*size, in) != (size_t)*size) {
      free(data);
      data = NULL;
    }
  }
  fclose(in);
  return data;
}

/*
 * Every file listed on `list` that can be read whole, into *data and *sizes (malloc'd, grown by
 * doubling); their count.
 */
static inline int read_list(FILE *list, uint8_t ***data, long **sizes)
{
  int n = 0, cap = 0;
  char path[4096];
  while (next_path(list, path, sizeof(path))) {
    long size;
    uint8_t *bytes = read_whole(path, &size);
    if (bytes == NULL) continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 1024;
      *data = realloc(*data, (size_t)cap * sizeof(**data));
      *sizes = realloc(*sizes, (size_t)cap * sizeof(**sizes));
    }
    (*data)[n] = bytes;
    (*sizes)[n++] = size;
  }
  return n;
}

#endif
