"""Terminal and Markdown renderings: pure functions from results to text."""
