"""Tables and servers the tests and the reliability benchmark share: bad command lines, hostile templates,
answers that quote planted values back, a misbehaving HTTP server."""
