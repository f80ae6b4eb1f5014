"""What several pages share: the app context, sidebar, formatting, tables and links."""
