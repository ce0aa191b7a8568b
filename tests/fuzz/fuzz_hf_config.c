/* tests/fuzz/fuzz_hf_config.c — libFuzzer harness of the Hugging Face config.json reader
 * (models/arch/hf_config.c): the input is the JSON text, parsed by model_arch_load_hf_json and,
 * when accepted, checked by model_arch_validate as the scenario loader does.
 * A config is user input: any crash, sanitizer report or leak is a finding.
 */
#include "config.h"
#include "tests/fuzz/fuzz-common.h"

#include "models/arch/arch.h"

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  g_autofree char *text = fuzz_strndup (data, size);
  g_autoptr (GError) error = NULL;
  ModelArch *arch = model_arch_load_hf_json (text, "fuzz.json", &error);
  if (arch == NULL && (error == NULL || error->message == NULL))
    abort ();
  if (arch != NULL)
    {
      g_autoptr (GError) e2 = NULL;
      (void) model_arch_validate (arch, &e2);
      model_arch_free (arch);
    }
  return 0;
}
