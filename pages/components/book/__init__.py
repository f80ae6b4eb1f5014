"""The in-app reader that citation links open when no base_url is configured."""
