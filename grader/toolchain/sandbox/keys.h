/* The words of a job file or a command line, each with how many times it may come, as a
   table of the grader's gives them (grader/toolchain/header.py writes it into a header). */
#ifndef GRADER_KEYS_H
#define GRADER_KEYS_H

#include <string.h>

namespace rt {

struct KeyRule {
    const char* word;
    int least, most; /* most -1: any number of times */
};

/* The index of `word` among the `count` rules, or -1. */
inline int key_of(const KeyRule* rules, int count, const char* word) {
    for (int k = 0; k < count; ++k) {
        if (strcmp(word, rules[k].word) == 0) return k;
    }
    return -1;
}

/* The first rule that `seen` (how many times each word came) breaks, or -1. */
inline int key_miscounted(const KeyRule* rules, int count, const int* seen) {
    for (int k = 0; k < count; ++k) {
        if (seen[k] < rules[k].least || (rules[k].most >= 0 && seen[k] > rules[k].most)) return k;
    }
    return -1;
}

}  // namespace rt

#endif
