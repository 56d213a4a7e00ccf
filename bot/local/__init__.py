"""Local processes and files: git, the repository mirrors, and the sandbox that runs tools
such as uv and a repository's own doc generator."""
