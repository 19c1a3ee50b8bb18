"""Table storage, apart from the engines that compute: one store per table library."""
