/* cli/main.c — placeholder main until the CLI lands. */
#include "config.h"
int main (void);
int
main (void)
{
  return 0;
}
