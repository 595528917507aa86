"""How results read: the report verb and summary, the text and plots of comparisons and rankings."""
