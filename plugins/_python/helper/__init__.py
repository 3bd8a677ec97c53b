"""svc's Python helper: what the build learns from Python files and requirement lines, with the
interpreter's own parsers. Stdlib only; it never imports or runs the user's code.

One module a job:
  source.py        a file's bytes as Python reads them; Problem, a user error with its catalogue code
  schema.py        the Endpoint argument names and HTTP methods (the SDK's generated _schema.py)
  static_eval.py   module-level facts and the static evaluation of decorator arguments
  signatures.py    an endpoint function's parameters, return annotation and the types they name
  endpoints.py     the @Endpoint functions and Endpoint objects of one file
  imports.py       the imports that run when a module is imported; the standard library's names
  requirements.py  requirement lines read by pip's vendored `packaging`
  __main__.py      the JSON protocol on stdin and stdout (`python3 <this folder> --serve`)
"""
