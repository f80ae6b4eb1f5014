"""The chat page: asking through the pipeline, rendering an answer record, browser history."""
