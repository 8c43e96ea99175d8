// Adversarial: hands in another student's kernel by including their file at compile time.
// Expected: refused (the compiler must not read files outside the submission).
#include "@VICTIM@"
