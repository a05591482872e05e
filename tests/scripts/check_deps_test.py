#!/usr/bin/python3
"""scripts/check_deps.py on small trees written here: what it allows, and that it
catches a forbidden edge, naming the file, the include and the edge."""
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'scripts', 'check_deps.py')

TABLE = """# a small table
base:
runtime: base
compiler/ir: base
compiler/lower: compiler/ir
compiler/codegen: compiler/lower
tuner: compiler/codegen
tools: *
"""


class CheckDeps(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.root = self.dir.name
        self.write('docs/dependencies.txt', TABLE)
        self.write('base/status.h', '#pragma once\nstruct Status {};\n')
        self.write('compiler/ir/expr.h', '#pragma once\n#include "base/status.h"\n')
        self.write('compiler/lower/lower.h', '#pragma once\n#include "compiler/ir/expr.h"\n')

    def tearDown(self):
        self.dir.cleanup()

    def write(self, path, text):
        full = os.path.join(self.root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, 'w') as f:
            f.write(text)

    def run_check(self):
        done = subprocess.run([sys.executable, SCRIPT, self.root], capture_output=True, text=True)
        return done.returncode, done.stderr

    def test_a_tree_that_follows_the_table_passes(self):
        self.assertEqual(self.run_check(), (0, ''))

    def test_edges_are_transitive(self):
        # lower names only ir, and ir names base: lower may include base.
        self.write('compiler/lower/pass.cc', '#include "base/status.h"\n#include "compiler/lower/lower.h"\n')
        self.assertEqual(self.run_check(), (0, ''))

    def test_a_forbidden_edge_fails_naming_file_include_and_edge(self):
        self.write('compiler/ir/printer.cc', '#include "compiler/ir/expr.h"\n\n#include "compiler/lower/lower.h"\n')
        code, err = self.run_check()
        self.assertEqual(code, 1)
        self.assertIn('compiler/ir/printer.cc:3: includes "compiler/lower/lower.h": '
                      'forbidden edge compiler/ir -> compiler/lower', err)

    def test_the_bottom_layer_depends_on_nothing(self):
        self.write('base/dtype.h', '#pragma once\n#include "runtime/ndarray.h"\n')
        self.write('runtime/ndarray.h', '#pragma once\n')
        code, err = self.run_check()
        self.assertEqual(code, 1)
        self.assertIn('base/dtype.h:2: includes "runtime/ndarray.h": forbidden edge base -> runtime', err)

    def test_the_compiler_never_includes_the_tuner(self):
        self.write('tuner/task.h', '#pragma once\n')
        self.write('compiler/codegen/build.cc', '#include "tuner/task.h"\n')
        code, err = self.run_check()
        self.assertEqual(code, 1)
        self.assertIn('compiler/codegen/build.cc:1: includes "tuner/task.h": the compiler does not know the tuner', err)

    def test_a_star_folder_may_include_anything(self):
        self.write('tools/main.cc', '#include "tuner/task.h"\n#include "compiler/ir/expr.h"\n')
        self.write('tuner/task.h', '#pragma once\n')
        self.assertEqual(self.run_check(), (0, ''))

    def test_a_forwarding_header_counts_as_its_target(self):
        # runtime/moved.h, left behind by a move, forwards to base/: including
        # it from the IR is an edge to base.
        self.write('runtime/moved.h', '// moved: a forwarding header\n#pragma once\n#include "base/status.h"\n')
        self.write('compiler/ir/op.cc', '#include "runtime/moved.h"\n')
        self.assertEqual(self.run_check(), (0, ''))
        # A header that does not say so, or has anything else in it, is the folder's own.
        self.write('runtime/moved.h', '#pragma once\n#include "base/status.h"\n')
        code, err = self.run_check()
        self.assertEqual(code, 1)
        self.assertIn('compiler/ir/op.cc:1: includes "runtime/moved.h": forbidden edge compiler/ir -> runtime', err)
        self.write('runtime/moved.h', '// a forwarding header\n#pragma once\n#include "base/status.h"\nint x;\n')
        code, err = self.run_check()
        self.assertEqual(code, 1)
        self.assertIn('forbidden edge compiler/ir -> runtime', err)

    def test_a_folder_missing_from_the_table_is_an_error(self):
        self.write('compiler/newthing/a.cc', '#include "base/status.h"\n')
        code, err = self.run_check()
        self.assertEqual(code, 1)
        self.assertIn('compiler/newthing/a.cc: its folder is not in the dependency table', err)

    def test_build_trees_and_external_headers_are_ignored(self):
        self.write('build/compiler/ir/gen.cc', '#include "tuner/task.h"\n')
        self.write('compiler/ir/llvm_user.cc', '#include "llvm/IR/Module.h"\n#include "gtest/gtest.h"\n')
        self.assertEqual(self.run_check(), (0, ''))

    def test_the_repository_follows_its_table(self):
        repo = os.path.join(os.path.dirname(SCRIPT), '..')
        done = subprocess.run([sys.executable, SCRIPT, repo], capture_output=True, text=True)
        self.assertEqual((done.returncode, done.stderr), (0, ''))


if __name__ == '__main__':
    unittest.main()
