"""What GitHub and Buildkite send, as data: payload models, webhook signatures, commands in
comments, permission levels. No I/O."""
