"""Word pools the sandbox's documents and events draw from.

Every institution is fictional but OCAS, every code made up with the shape of real ones (CSIS
and USIS 6 characters, ESIS 8). "Demo College", CSIS 555555, is the canpesc Ontario sample's
institution: the sandbox plays it as the user's own college.
"""

from __future__ import annotations

# Accents, apostrophes and hyphens on purpose: they are what breaks naive parsers and joins.
FIRST_NAMES = (
    "Zoë", "Chloé", "Renée", "José", "François", "Aurélie", "Noémie", "Hélène", "Björn",
    "Jürgen", "Siobhán", "Seán", "Inés", "Joaquín", "Mary-Kate", "Jean-Luc", "Anne-Marie",
    "Emma", "Noah", "Ethan", "Sophia", "Jacob", "Ava", "Lucas", "Maya", "Arjun", "Fatima",
    "Mohammed", "Hannah", "Liam", "Olivia", "Wei", "Priya", "Oluwaseun", "Aaliyah", "Mateo",
)  # fmt: skip
MIDDLE_NAMES = ("Marie", "José", "Lee", "Ann", "Élise", "James", "Kaur", "Grace", "Noël")
LAST_NAMES = (
    "O'Brien", "D'Angelo", "O'Neil", "D'Souza", "Müller", "Nuñez", "Gonçalves", "Lefèbvre",
    "Côté", "Bélanger", "Gagné", "Smith-Jones", "García-López", "Van der Berg", "MacDonald",
    "Nguyen", "Singh", "Patel", "Chen", "Tremblay", "Kowalski", "Ødegaard", "Çelik", "Brown",
    "Wilson", "Thompson", "Martin", "Roy", "Okafor", "Haddad",
)  # fmt: skip
GENDER_CODES = ("Female", "Male", "Unreported")

# (name, CSIS) of the workbench user's college, and of OCAS as it names itself on the wire.
HOME_COLLEGE = ("Demo College", "555555")
OCAS_NAME = "OCAS Application Services Inc."
OCAS_ID = "OCAS"

# Other Ontario-style institutions: (name, id element, id value).
COLLEGES = (
    ("Lakeshore College", "CSIS", "354100"),
    ("Northern Lights College of Applied Arts & Technology", "CSIS", "354210"),
    ("Collège des Trois-Rivières", "CSIS", "354320"),
    ("Algonquin Ridge Polytechnic", "CSIS", "354430"),
    ("St. Brendan's College", "CSIS", "354540"),
    ("Huronia Institute of Technology", "CSIS", "354650"),
)
UNIVERSITIES = (
    ("University of Huronia", "USIS", "350110"),
    ("Université du Nord-Ouest", "USIS", "350220"),
    ("Queen's Landing University", "USIS", "350330"),
)
HIGH_SCHOOLS = (
    ("Smith & Jones Collegiate Institute", "00912345"),
    ("St. Mary's & St. Joseph's Catholic Secondary School", "00923456"),
    ("École secondaire Béatrice-Desloges-Ouest", "00934567"),
    ("Sir Wilfrid Laurier Secondary School", "00945678"),
    ("Lakeview District High School", "00956789"),
)

# (program name, credential title)
PROGRAMS = (
    ("Business - Accounting", "Ontario College Diploma"),
    ("Business - Marketing", "Ontario College Diploma"),
    ("General Arts and Science", "Ontario College Certificate"),
    ("Personal Support Worker", "Ontario College Certificate"),
    ("Computer Programming & Analysis", "Ontario College Advanced Diploma"),
    ("Early Childhood Education", "Ontario College Diploma"),
    ("Culinary Management", "Ontario College Diploma"),
    ("Practical Nursing", "Ontario College Diploma"),
    ("Human Resources Management", "Ontario College Graduate Certificate"),
    ("Police Foundations", "Ontario College Diploma"),
)

# (subject, number, title): course titles follow the Ontario sample's habits ("&", short forms).
COURSES = (
    ("ACCT", "101", "Financial Accounting I"), ("ACCT", "201", "Managerial Accounting"),
    ("ANAT", "131", "Anat & Phys for General Arts & Science 1"),
    ("BSNS", "102", "Introduction to Business"), ("BSNS", "412", "Credit Management"),
    ("CHEM", "808", "General Chemistry I"), ("COMM", "170", "College Communication I"),
    ("COMM", "270", "Business Communication & Formal Report"),
    ("COMP", "105", "Programming Fundamentals"), ("COMP", "215", "Web Development I"),
    ("COMP", "310", "Databases & Data Modelling"), ("CULN", "110", "Culinary Techniques I"),
    ("CULN", "210", "Food Safety & Sanitation"), ("ECE", "100", "Child Development"),
    ("ECE", "205", "Observing & Documenting Play"), ("ECON", "108", "Economics I"),
    ("ENGL", "143", "Grammar and Editing Skills"), ("ENGL", "144", "Survey of Western Literature"),
    ("FNCE", "210", "Personal Financial Planning"), ("FNCE", "300", "Taxation I"),
    ("FREN", "101", "Français langue seconde I"), ("HRM", "600", "Recruitment & Selection"),
    ("HRM", "610", "Employment Law"), ("LAWS", "461", "Ethics and Law"),
    ("MATH", "068", "Qualifying Mathematics-Tech'n Advan"), ("MATH", "120", "Business Mathematics"),
    ("MKTG", "101", "Principles of Marketing"), ("MKTG", "478", "Sales and Service"),
    ("NURS", "101", "Foundations of Nursing Practice"), ("NURS", "150", "Health Assessment I"),
    ("PHIL", "220", "Critical Thinking"), ("PHYS", "806", "Introductory Physics I"),
    ("POLF", "101", "Criminology"), ("POLF", "140", "Community Policing"),
    ("PSW", "110", "Personal Support Worker Foundations"),
    ("PSYC", "100", "Introduction to Psychology"),
    ("SOCI", "115", "Sociology: Canadian Perspectives"), ("SPAN", "111", "Introductory Spanish"),
    ("STAT", "200", "Statistics for Business"), ("WORK", "300", "Co-operative Education Work Term"),
)  # fmt: skip
TRANSFER_COURSES = (
    ("NUTR", "3001", "Nutrition for Life"),
    ("ENGL", "1000", "Academic Writing (transfer)"),
    ("MATH", "1100", "College Algebra (transfer)"),
)

# Ontario colleges' usual 4.0 scale: (grade, grade points, how often); points None: the grade
# does not count toward the GPA.
GRADES: tuple[tuple[str, float | None, int], ...] = (
    ("A+", 4.0, 6), ("A", 4.0, 9), ("A-", 3.7, 9), ("B+", 3.3, 10), ("B", 3.0, 10),
    ("B-", 2.7, 7), ("C+", 2.3, 6), ("C", 2.0, 5), ("D", 1.0, 3), ("F", 0.0, 3), ("P", None, 2),
    ("W", None, 2),
)  # fmt: skip

EVENT_PROGRAMS = (
    ("BACC", "Business - Accounting"),
    ("CPAN", "Computer Programming & Analysis"),
    ("ECED", "Early Childhood Education"),
    ("PNUR", "Practical Nursing"),
    ("HRMG", "Human Resources Management"),
    ("CULM", "Culinary Management"),
)
CAMPUSES = ("Main", "Downtown", "Lakeshore", "Online")
CITIZENSHIPS = ("IN", "CN", "NG", "PH", "VN", "BR", "FR", "MX", "KR", "CO")
