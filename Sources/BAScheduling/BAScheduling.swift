// Placeholder: see issue 5 (periodic scheduling).
