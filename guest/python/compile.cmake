# How the build compiles guest/python/prelude.py (cmake/guest_languages.cmake): into a
# hash-based .pyc never checked against the source, whose copy in each sandbox is new.
set(COMPILE_PRELUDE /usr/bin/python3 -I -S -c
  "__import__('py_compile').compile(__import__('sys').argv[1], cfile=__import__('sys').argv[2], dfile='/codecell/prelude.py', doraise=True, invalidation_mode=__import__('py_compile').PycInvalidationMode.UNCHECKED_HASH)")
