"""The audit explorer: filters, charts, the record drill-down."""
