#!/bin/sh
# install.sh ruby|python: installs the binding exactly as its README says, from a copy of the
# repository that is deleted before the binding's own suite runs against what was installed, so
# the suite also shows the installed package needs nothing from the repository.
set -eu
lang=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d /tmp/codecell-binding.XXXXXX)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"
copy=$work/repo
mkdir "$copy"
cp -r "$root/CMakeLists.txt" "$root/cmake" "$root/src" "$root/include" "$root/guest" \
        "$root/bindings" "$copy/"
# What an earlier build left in the source tree (ignored by git) is not part of a fresh clone.
rm -rf "$copy/bindings/ruby/ext/codecell/engine" "$copy/bindings/ruby"/codecell-*.gem \
        "$copy/bindings/python/build" "$copy/bindings/python"/*.egg-info
cp -r "$copy/bindings/$lang" "$work/suite"

case $lang in
ruby)
        (cd "$copy" && cd bindings/ruby && gem build codecell.gemspec >/dev/null &&
                gem install --local --install-dir "$work/g" codecell-*.gem >/dev/null)
        rm -rf "$copy"
        cd "$work"
        # The README's check, with nothing but the installed gem on the path.
        value=$(GEM_HOME=$work/g GEM_PATH=$work/g ruby -e 'require "codecell"; p CodeCell::Cell.new(language: :ruby).run("1+1").value')
        [ "$value" = 2 ] || { echo "install.sh: the README's check printed '$value'" >&2; exit 1; }
        # The suite also needs minitest, a system gem (Debian's ruby-minitest).
        cd "$work/suite/test"
        GEM_HOME=$work/g GEM_PATH=$work/g:$(ruby -e 'print Gem.default_path.join(":")') \
                ruby -e 'Dir["test_*.rb"].sort.each { |f| require_relative f }'

        ;;
python)
        (cd "$copy" && python3 -m venv --system-site-packages "$work/v" &&
                "$work/v/bin/pip" install -q --no-index --no-build-isolation bindings/python)
        rm -rf "$copy"
        cd "$work"
        value=$("$work/v/bin/python" -c 'import codecell; print(codecell.Cell(language="python").run("1+1").value)')
        [ "$value" = 2 ] || { echo "install.sh: the README's check printed '$value'" >&2; exit 1; }
        cd "$work/suite/tests"
        "$work/v/bin/python" -m unittest -v
        ;;
*)
        echo "usage: install.sh ruby|python" >&2
        exit 2
        ;;
esac
