"""The HTTP layer: session, tokens, answers, limits and masking, on public httpx APIs."""
