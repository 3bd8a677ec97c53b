/** The Python interpreter the build runs (discovery helper, pip): `SVC_PYTHON`, else `python3`. */
export const pythonInterpreter = (): string => process.env.SVC_PYTHON || "python3";
