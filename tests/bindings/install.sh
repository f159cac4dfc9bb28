#!/bin/sh
# install.sh ruby|python [unprivileged|readme]: installs the binding exactly as its README says,
# from a copy of the repository that is deleted before the binding's own suite runs against what
# was installed, so the suite also shows the installed package needs nothing from the repository.
# With "unprivileged" (as root only), the jail's tests then run again as nobody: the jail of a
# user without a cgroup, Landlock and user namespaces all the same. With "readme", the README's
# complete example runs instead of the suite, as written, and prints what the README shows
# (readme_example.py).
set -eu
lang=$1
mode=${2:-}
if [ "$mode" = unprivileged ] && [ "$(id -u)" -ne 0 ]; then
        echo "SKIP: already running unprivileged; binding_$lang covers this case"
        exit 77
fi
root=$(cd "$(dirname "$0")/../.." && pwd)
readme=$root/bindings/$lang/README.md
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
# The on_unsupported tests' host without Landlock (without_landlock.c), where nobody reaches it.
if [ -n "${CODECELL_WITHOUT_LANDLOCK:-}" ]; then
        cp "$CODECELL_WITHOUT_LANDLOCK" "$work/without_landlock"
        CODECELL_WITHOUT_LANDLOCK=$work/without_landlock
        export CODECELL_WITHOUT_LANDLOCK
fi
# Runs the rest of a line as nobody when unprivileged, with only what the suite needs.
as_user() {
        if [ "$mode" = unprivileged ]; then
                chmod -R a+rX "$work"
                setpriv --reuid=65534 --regid=65534 --clear-groups env -i PATH=/usr/bin:/bin \
                        HOME="$work" CODECELL_WITHOUT_LANDLOCK="${CODECELL_WITHOUT_LANDLOCK:-}" "$@"
        else
                "$@"
        fi
}

case $lang in
ruby)
        (cd "$copy" && cd bindings/ruby && gem build codecell.gemspec >/dev/null &&
                gem install --local --install-dir "$work/g" codecell-*.gem >/dev/null)
        rm -rf "$copy"
        cd "$work"
        # The README's check, with nothing but the installed gem on the path.
        value=$(GEM_HOME=$work/g GEM_PATH=$work/g ruby -e 'require "codecell"; p CodeCell::Cell.new(language: :ruby).run("1+1").value')
        [ "$value" = 2 ] || { echo "install.sh: the README's check printed '$value'" >&2; exit 1; }
        if [ "$mode" = readme ]; then
                python3 "$root/tests/bindings/readme_example.py" "$readme" -- \
                        env GEM_HOME="$work/g" GEM_PATH="$work/g" ruby
                exit
        fi
        # The suite also needs minitest, a system gem (Debian's ruby-minitest).
        cd "$work/suite/test"
        files='test_*.rb'
        [ "$mode" = unprivileged ] && files='test_*jail*.rb'
        as_user env GEM_HOME="$work/g" GEM_PATH="$work/g:$(ruby -e 'print Gem.default_path.join(":")')" \
                ruby -e "Dir['$files'].sort.each { |f| require_relative f }"

        ;;
python)
        # nobody runs the system's Python: one under /root (pyenv) is out of its reach.
        py=python3
        [ "$mode" = unprivileged ] && [ -x /usr/bin/python3 ] && py=/usr/bin/python3
        (cd "$copy" && "$py" -m venv --system-site-packages "$work/v" &&
                "$work/v/bin/pip" install -q --no-index --no-build-isolation bindings/python)
        rm -rf "$copy"
        cd "$work"
        value=$("$work/v/bin/python" -c 'import codecell; print(codecell.Cell(language="python").run("1+1").value)')
        [ "$value" = 2 ] || { echo "install.sh: the README's check printed '$value'" >&2; exit 1; }
        if [ "$mode" = readme ]; then
                python3 "$root/tests/bindings/readme_example.py" "$readme" -- "$work/v/bin/python"
                exit
        fi
        cd "$work/suite/tests"
        if [ "$mode" = unprivileged ]; then
                as_user "$work/v/bin/python" -m unittest -v test_jail test_jail_answer test_jail_speed
        else
                "$work/v/bin/python" -m unittest -v
        fi
        ;;
*)
        echo "usage: install.sh ruby|python" >&2
        exit 2
        ;;
esac
