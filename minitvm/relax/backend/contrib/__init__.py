"""tvm.relax.backend.contrib: pattern tables of external (BYOC) back ends; importing one
registers its patterns (``tensorrt``). Their codegens are GPU libraries minitvm does not have:
``relax.transform.RunCodegen`` says so."""
