// Adversarial: includes the file where the TA keeps the secret, so that the compiler's
// error message (shown in the student's report) quotes it. Expected: refused.
#include "@SECRET_FILE@"
