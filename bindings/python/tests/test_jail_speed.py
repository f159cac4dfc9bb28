"""What keeps codecell.jail as cheap as the seed's bare fork (bench/jail.sh), checked by what it
leaves behind, never by a timing."""
import subprocess
import sys
import unittest


class TestJailSpeed(unittest.TestCase):
    def test_importing_codecell_maps_no_libcurl(self):
        """Every fork copies the caller's mappings: the engine must not bring libcurl's two dozen
        libraries into every process that imports codecell (it loads libcurl when an MCP server
        over HTTP needs it)."""
        script = "import codecell._native\nprint(open('/proc/self/maps').read())\n"
        p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("_engine.so", p.stdout)
        curl = [line for line in p.stdout.splitlines() if "libcurl" in line]
        self.assertEqual(curl, [], "libcurl is mapped")


if __name__ == "__main__":
    unittest.main()
