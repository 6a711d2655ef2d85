// Placeholder: see issue 5 (purgeable files).
