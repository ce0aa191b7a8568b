/* tests/fuzz/fuzz_h5.c — libFuzzer harness of the HDF5 reader behind `stepsim export` and
 * `stepsim plot` (sim/h5out_export.c, sim/h5out_series.c): the input is a whole file,
 * written to the scratch directory and read as those commands read it — every kind of object
 * they export (/summary, /tasks, /results, all of /series, the root) and the root and
 * /results string attributes `plot` reads.
 *
 * The seeds are small run and batch files (tests/fuzz/corpus/h5); the reader must answer a
 * corrupt file with an error (doc/hdf5-layout.md is the layout it accepts), never a crash,
 * a sanitizer report, a leak, a huge allocation or a hang. libhdf5 itself is not
 * instrumented, so coverage guides only through stepsim's code, but ASan still checks the
 * memory libhdf5 allocates and copies through the intercepted libc calls.
 */
#include "config.h"
#include "tests/fuzz/fuzz-common.h"

#include <stdio.h>
#include "sim/h5out.h"

static char *h5_path;
static FILE *sink;

int
LLVMFuzzerInitialize (int *argc, char ***argv)
{
  (void) argc;
  (void) argv;
  h5_path = g_build_filename (fuzz_scratch_dir (), "fuzz.h5", NULL);
  sink = fopen ("/dev/null", "w");
  if (sink == NULL)
    abort ();
  return 0;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  /* Each call opens the file again (as each command does), and an open costs libhdf5 about
   * a megabyte of zeroed metadata cache, so the list is kept to one object per reading
   * path: /series covers every rank's memory series, "/" a group holding no series. */
  static const char *const objects[] = { "/summary", "/tasks", "/results", "/series", "/" };
  static const char *const attrs[][2] = { { "/", "name" }, { "/results", "unit_step_time" } };
  fuzz_write_file (h5_path, data, size);
  for (gsize i = 0; i < G_N_ELEMENTS (objects); i++)
    {
      g_autoptr (GError) error = NULL;
      if (!sim_h5out_export_tsv_in_process (h5_path, objects[i], sink, &error)
          && (error == NULL || error->message == NULL))
        abort ();
      if (error != NULL && error->domain != SIM_H5OUT_ERROR)
        abort ();
    }
  for (gsize i = 0; i < G_N_ELEMENTS (attrs); i++)
    {
      g_autoptr (GError) error = NULL;
      g_free (sim_h5out_read_text_attr_in_process (h5_path, attrs[i][0], attrs[i][1], &error));
    }
  return 0;
}
