"""tvm.relay.transform: Relay passes (one module per pass) and the function-pass API."""
