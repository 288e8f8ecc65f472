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

#endif
