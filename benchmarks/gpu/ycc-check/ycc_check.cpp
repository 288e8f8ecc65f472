// The colour step (native/cuda/ycc.cu) on the host against libjpeg-turbo's own RGB decode: see README.md.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <string>
extern "C" {
#include <jpeglib.h>
}
#define __global__
#define __device__
#define __forceinline__ inline
namespace { struct dim3_host { unsigned x, y, z; }; thread_local dim3_host blockIdx, threadIdx, blockDim; }
#include "ycc.cu"

static std::vector<unsigned char> encode(int w, int h, int comps, int hf, int vf, unsigned seed, bool progressive) {
  jpeg_compress_struct c; jpeg_error_mgr e; c.err = jpeg_std_error(&e); jpeg_create_compress(&c);
  unsigned char *buf = nullptr; unsigned long size = 0; jpeg_mem_dest(&c, &buf, &size);
  c.image_width = w; c.image_height = h; c.input_components = comps; c.in_color_space = comps == 3 ? JCS_RGB : JCS_GRAYSCALE;
  jpeg_set_defaults(&c); jpeg_set_quality(&c, 90, TRUE);
  if (comps == 3) { c.comp_info[0].h_samp_factor = hf; c.comp_info[0].v_samp_factor = vf; c.comp_info[1].h_samp_factor = c.comp_info[1].v_samp_factor = 1; c.comp_info[2].h_samp_factor = c.comp_info[2].v_samp_factor = 1; }
  if (progressive) jpeg_simple_progression(&c);
  jpeg_start_compress(&c, TRUE);
  std::vector<unsigned char> row(w * comps); srand(seed);
  while (c.next_scanline < c.image_height) {
    for (int x = 0; x < w * comps; x++) row[x] = (unsigned char)((rand() % 4 == 0) ? rand() : (x * 7 + c.next_scanline * 3) & 255);
    JSAMPROW r = row.data(); jpeg_write_scanlines(&c, &r, 1);
  }
  jpeg_finish_compress(&c); std::vector<unsigned char> out(buf, buf + size); free(buf); jpeg_destroy_compress(&c); return out;
}

static bool check(const std::vector<unsigned char>& jpg, const char *what) {
  // reference: libjpeg-turbo's default RGB decode
  jpeg_decompress_struct d; jpeg_error_mgr e; d.err = jpeg_std_error(&e); jpeg_create_decompress(&d);
  jpeg_mem_src(&d, jpg.data(), jpg.size()); jpeg_read_header(&d, TRUE); d.out_color_space = JCS_RGB; jpeg_start_decompress(&d);
  int w = d.output_width, h = d.output_height; std::vector<unsigned char> ref((size_t) w * h * 3);
  while (d.output_scanline < d.output_height) { JSAMPROW r = &ref[(size_t) d.output_scanline * w * 3]; jpeg_read_scanlines(&d, &r, 1); }
  jpeg_finish_decompress(&d); jpeg_destroy_decompress(&d);
  // raw planes
  jpeg_create_decompress(&d); jpeg_mem_src(&d, jpg.data(), jpg.size()); jpeg_read_header(&d, TRUE); d.raw_data_out = TRUE; jpeg_start_decompress(&d);
  int nc = d.num_components, hmax = d.max_h_samp_factor, vmax = d.max_v_samp_factor;
  std::vector<std::vector<unsigned char>> planes(nc); std::vector<int> pw(nc), ph(nc), pitch(nc);
  for (int c = 0; c < nc; c++) { pw[c] = (w * d.comp_info[c].h_samp_factor + hmax - 1) / hmax; ph[c] = (h * d.comp_info[c].v_samp_factor + vmax - 1) / vmax;
    pitch[c] = d.comp_info[c].width_in_blocks * DCTSIZE; planes[c].resize((size_t) pitch[c] * (d.comp_info[c].height_in_blocks * DCTSIZE + vmax * DCTSIZE)); }
  int rows_per = vmax * DCTSIZE; int done = 0;
  while (d.output_scanline < d.output_height) {
    std::vector<std::vector<JSAMPROW>> ptrs(nc); JSAMPARRAY arr[4];
    for (int c = 0; c < nc; c++) { int rc = d.comp_info[c].v_samp_factor * DCTSIZE; ptrs[c].resize(rc);
      for (int r = 0; r < rc; r++) ptrs[c][r] = &planes[c][(size_t) (done / vmax * d.comp_info[c].v_samp_factor + r) * pitch[c]]; arr[c] = ptrs[c].data(); }
    jpeg_read_raw_data(&d, arr, rows_per); done += rows_per;
  }
  jpeg_finish_decompress(&d); jpeg_destroy_decompress(&d);
  std::vector<unsigned char> out((size_t) w * h * 3);
  stoke_ycc_job j{}; j.y = (unsigned long long) planes[0].data(); j.y_pitch = pitch[0]; j.width = w; j.height = h; j.dst = (unsigned long long) out.data();
  if (nc == 3) { j.cb = (unsigned long long) planes[1].data(); j.cr = (unsigned long long) planes[2].data(); j.c_pitch = pitch[1]; j.c_width = pw[1]; j.c_height = ph[1]; j.h_factor = hmax / 1; j.v_factor = vmax; }
  blockDim = {16, 16, 1};
  for (unsigned by = 0; by < (unsigned)(h + 15) / 16; by++) for (unsigned bx = 0; bx < (unsigned)(w + 15) / 16; bx++) for (unsigned ty = 0; ty < 16; ty++) for (unsigned tx = 0; tx < 16; tx++) {
    blockIdx = {bx, by, 0}; threadIdx = {tx, ty, 0}; stoke_ycc_rgb_batch(&j); }
  size_t bad = 0; int worst = 0;
  for (size_t i = 0; i < out.size(); i++) { int dd = abs(out[i] - ref[i]); if (dd) bad++; if (dd > worst) worst = dd; }
  if (bad) { printf("FAIL %s %dx%d: %zu bytes differ, worst %d\n", what, w, h, bad, worst); return false; }
  return true;
}

int main(int argc, char **argv) {
  int fails = 0, n = 0;
  int fac[][2] = {{1,1},{2,1},{2,2},{1,2},{4,1},{4,2}};
  int sizes[][2] = {{1,1},{2,3},{3,2},{4,4},{5,5},{7,9},{16,16},{17,33},{33,17},{64,48},{375,500},{501,373}};
  for (auto &f : fac) for (auto &s : sizes) for (int p = 0; p < 2; p++) {
    char what[64]; snprintf(what, sizeof what, "h%dv%d%s", f[0], f[1], p ? " progressive" : "");
    n++; if (!check(encode(s[0], s[1], 3, f[0], f[1], n, p), what)) fails++; }
  for (auto &s : sizes) { n++; if (!check(encode(s[0], s[1], 1, 1, 1, n, false), "gray")) fails++; }
  for (int i = 1; i < argc; i++) { FILE *fp = fopen(argv[i], "rb"); std::vector<unsigned char> b; int ch; while ((ch = fgetc(fp)) != EOF) b.push_back(ch); fclose(fp); n++; if (!check(b, argv[i])) fails++; }
  printf("%d of %d differ\n", fails, n); return fails != 0;
}
