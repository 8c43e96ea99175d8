"""One lock for everything of the grader's that builds a Python AST from threads that
run side by side: `ast.parse`, and numpy's `np.load`, which reads each array's header
with `ast.literal_eval`. CPython 3.11 counts the AST constructor's depth once per
interpreter, not per thread, so two threads building ASTs at once can end in
'SystemError: AST constructor recursion depth mismatch' (CI saw it as two cases read
the reference cache at once; python/cpython#106905)."""

import threading

HELD = threading.Lock()
