"""Services: each a thin use of store/ and (where needed) index/. The CLI calls these, nothing lower."""
