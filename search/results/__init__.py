"""What a search leaves and how it is read: the summary, the test split, TensorBoard, the report, export and
predict. Imports the foundation and the trial side's model and data code, never `search.running`."""
