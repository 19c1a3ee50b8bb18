"""The rows of TRL dataset types and the table as a whole (layer 5).

`dataset_types` names the types and their fields, `value_formats` tells conversational
from standard values, `standard` judges standard values, `dataset_check` and
`openai_preference` judge a row, `build` makes a table's checks, `locate_rows` places a
row's problems, `table_checks` judges the row count and the columns.
"""
